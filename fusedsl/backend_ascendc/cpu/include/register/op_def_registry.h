// Op-project host side on the CPU: the op definition (ops::OpDef, OP_ADD), the tiling and
// shape-inference contexts (gert::TilingContext, gert::InferShapeContext) and the graph
// enums (ge::DataType, ge::Format, ge::graphStatus) that op_host/<op>.cpp uses.
//
// CANN runs an op's tiling function inside the graph engine.  fusedsl's CPU stand-in is
// fusedsl_cpu::RunOpTiling(op type, input shapes, attrs as doubles): it finds the op registered by
// OP_ADD, runs its InferShape and its tiling function with these shapes and returns the tiling
// bytes, blockDim, tiling key, workspace size and output shapes, which a CPU main program hands
// to ICPU_RUN_KF.  Everything the tiling function does wrong (no blockDim, tiling data larger
// than the buffer, a shape index out of range) is reported instead of running on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fusedsl_cpu/ge_types.h"   // ge::DataType
#include "register/tilingdata_base.h"

namespace ge {

using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;

enum Format { FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2 };

}  // namespace ge

namespace gert {

// A tensor shape as the tiling function sees it.
class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
    explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const {
        if (i >= dims_.size()) {
            std::fprintf(stderr, "[ERROR] fusedsl CPU op host: GetDim(%zu) of a %zu-d shape\n", i, dims_.size());
            std::exit(1);
        }
        return dims_[i];
    }
    void SetDimNum(size_t n) { dims_.resize(n); }
    void SetDim(size_t i, int64_t value) {
        if (i >= dims_.size()) {
            dims_.resize(i + 1);
        }
        dims_[i] = value;
    }
    void AppendDim(int64_t value) { dims_.push_back(value); }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t d : dims_) {
            n *= d;
        }
        return n;
    }
    const std::vector<int64_t>& Dims() const { return dims_; }
    bool operator==(const Shape& o) const { return dims_ == o.dims_; }

private:
    std::vector<int64_t> dims_;
};

// Origin and storage shape are the same for the ND format fusedsl's CPU stand-in models.
class StorageShape {
public:
    StorageShape() = default;
    explicit StorageShape(Shape s) : shape_(std::move(s)) {}
    const Shape& GetStorageShape() const { return shape_; }
    const Shape& GetOriginShape() const { return shape_; }
    Shape& MutableStorageShape() { return shape_; }

private:
    Shape shape_;
};

class TilingData {
public:
    explicit TilingData(size_t capacity) : bytes_(capacity, 0) {}
    void* GetData() { return bytes_.data(); }
    size_t GetCapacity() const { return bytes_.size(); }
    void SetDataSize(size_t size) { size_ = size; }
    size_t GetDataSize() const { return size_; }
    const std::vector<uint8_t>& Bytes() const { return bytes_; }

private:
    std::vector<uint8_t> bytes_;
    size_t size_ = 0;
};

// Attr values travel as doubles (exact for every int32 and float): GetFloat and GetInt read
// the same attr as the type the op declared (Float() / Int()).
class RuntimeAttrs {
public:
    explicit RuntimeAttrs(const std::vector<double>& values) {
        for (double v : values) {
            floats_.push_back(static_cast<float>(v));
            ints_.push_back(static_cast<int64_t>(v));
        }
    }
    const float* GetFloat(size_t i) const { return i < floats_.size() ? &floats_[i] : nullptr; }
    const int64_t* GetInt(size_t i) const { return i < ints_.size() ? &ints_[i] : nullptr; }
    size_t GetAttrNum() const { return floats_.size(); }

private:
    std::vector<float> floats_;
    std::vector<int64_t> ints_;
};

class TilingContext {
public:
    TilingContext(std::vector<StorageShape> inputs, std::vector<StorageShape> outputs, const std::vector<double>& attrs)
        : inputs_(std::move(inputs)), outputs_(std::move(outputs)), attrs_(attrs), raw_(64 * 1024) {}
    const StorageShape* GetInputShape(size_t i) const { return i < inputs_.size() ? &inputs_[i] : nullptr; }
    const StorageShape* GetOutputShape(size_t i) const { return i < outputs_.size() ? &outputs_[i] : nullptr; }
    size_t GetComputeNodeInputNum() const { return inputs_.size(); }
    const RuntimeAttrs* GetAttrs() const { return &attrs_; }
    TilingData* GetRawTilingData() { return &raw_; }
    ge::graphStatus SetBlockDim(uint32_t blockDim) {
        block_dim_ = blockDim;
        block_dim_set_ = true;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const { return block_dim_; }
    bool BlockDimSet() const { return block_dim_set_; }
    ge::graphStatus SetTilingKey(uint64_t key) {
        tiling_key_ = key;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const { return tiling_key_; }
    size_t* GetWorkspaceSizes(size_t n) {
        workspace_.resize(std::max(workspace_.size(), n), 0);
        return workspace_.data();
    }
    const std::vector<size_t>& WorkspaceSizes() const { return workspace_; }
    const void* GetPlatformInfo() const { return nullptr; }

private:
    std::vector<StorageShape> inputs_, outputs_;
    RuntimeAttrs attrs_;
    TilingData raw_;
    uint32_t block_dim_ = 0;
    bool block_dim_set_ = false;
    uint64_t tiling_key_ = 0;
    std::vector<size_t> workspace_;
};

class InferShapeContext {
public:
    InferShapeContext(std::vector<Shape> inputs, size_t outputs, const std::vector<double>& attrs)
        : inputs_(std::move(inputs)), outputs_(outputs), attrs_(attrs) {}
    const Shape* GetInputShape(size_t i) const { return i < inputs_.size() ? &inputs_[i] : nullptr; }
    Shape* GetOutputShape(size_t i) { return i < outputs_.size() ? &outputs_[i] : nullptr; }
    const RuntimeAttrs* GetAttrs() const { return &attrs_; }
    const std::vector<Shape>& Outputs() const { return outputs_; }

private:
    std::vector<Shape> inputs_;
    std::vector<Shape> outputs_;
    RuntimeAttrs attrs_;
};

}  // namespace gert

namespace ops {

enum Option { REQUIRED = 0, OPTIONAL = 1, DYNAMIC = 2 };

class OpParamDef {
public:
    explicit OpParamDef(std::string name) : name_(std::move(name)) {}
    OpParamDef& ParamType(Option option) { option_ = option; return *this; }
    OpParamDef& DataType(std::vector<ge::DataType> types) { types_ = std::move(types); return *this; }
    OpParamDef& DataTypeList(std::vector<ge::DataType> types) { types_ = std::move(types); return *this; }
    OpParamDef& Format(std::vector<ge::Format> formats) { formats_ = std::move(formats); return *this; }
    OpParamDef& FormatList(std::vector<ge::Format> formats) { formats_ = std::move(formats); return *this; }
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats) { formats_ = std::move(formats); return *this; }
    const std::string& Name() const { return name_; }

private:
    std::string name_;
    Option option_ = REQUIRED;
    std::vector<ge::DataType> types_;
    std::vector<ge::Format> formats_;
};

class OpAttrDef {
public:
    explicit OpAttrDef(std::string name) : name_(std::move(name)) {}
    OpAttrDef& AttrType(Option option) { option_ = option; return *this; }
    OpAttrDef& Float(float value = 0.0f) { default_ = value; return *this; }
    OpAttrDef& Int(int64_t value = 0) { default_ = static_cast<double>(value); return *this; }
    const std::string& Name() const { return name_; }

private:
    std::string name_;
    Option option_ = REQUIRED;
    double default_ = 0.0;
};

using TilingFunc = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext*);

class OpAICoreConfig {};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(TilingFunc fn) { tiling_ = fn; return *this; }
    OpAICoreDef& AddConfig(const char* soc) { socs_.emplace_back(soc); return *this; }
    OpAICoreDef& AddConfig(const char* soc, const OpAICoreConfig&) { return AddConfig(soc); }
    TilingFunc Tiling() const { return tiling_; }
    const std::vector<std::string>& Socs() const { return socs_; }

private:
    TilingFunc tiling_ = nullptr;
    std::vector<std::string> socs_;
};

class OpDef {
public:
    explicit OpDef(const char* type) : type_(type) {}
    virtual ~OpDef() = default;
    OpParamDef& Input(const char* name) { inputs_.emplace_back(name); return inputs_.back(); }
    OpParamDef& Output(const char* name) { outputs_.emplace_back(name); return outputs_.back(); }
    OpAttrDef& Attr(const char* name) { attrs_.emplace_back(name); return attrs_.back(); }
    OpDef& SetInferShape(InferShapeFunc fn) { infer_shape_ = fn; return *this; }
    template <typename F>
    OpDef& SetInferDataType(F) { return *this; }
    OpAICoreDef& AICore() { return aicore_; }
    const std::string& Type() const { return type_; }
    size_t InputNum() const { return inputs_.size(); }
    size_t OutputNum() const { return outputs_.size(); }
    size_t AttrNum() const { return attrs_.size(); }
    InferShapeFunc InferShape() const { return infer_shape_; }

private:
    std::string type_;
    std::vector<OpParamDef> inputs_, outputs_;
    std::vector<OpAttrDef> attrs_;
    InferShapeFunc infer_shape_ = nullptr;
    OpAICoreDef aicore_;
};

inline std::map<std::string, std::function<std::unique_ptr<OpDef>()>>& OpRegistry() {
    static std::map<std::string, std::function<std::unique_ptr<OpDef>()>> registry;
    return registry;
}

struct OpDefRegisterer {
    OpDefRegisterer(const char* type, std::function<std::unique_ptr<OpDef>()> make) {
        OpRegistry()[type] = std::move(make);
    }
};

}  // namespace ops

#define OP_ADD(op_type)                                                                  \
    static ::ops::OpDefRegisterer fusedsl_op_registerer_##op_type(                       \
        #op_type, [] { return std::unique_ptr<::ops::OpDef>(new op_type(#op_type)); })

namespace fusedsl_cpu {

struct OpTilingResult {
    std::vector<uint8_t> tiling;     // the tiling data bytes (GetDataSize of them)
    uint32_t blockDim = 0;
    uint64_t tilingKey = 0;
    size_t workspaceBytes = 0;       // the sum of GetWorkspaceSizes
    std::vector<gert::Shape> outputs;
};

[[noreturn]] inline void OpHostFailure(const std::string& op, const std::string& what) {
    std::fprintf(stderr, "[ERROR] fusedsl CPU op host (%s): %s\n", op.c_str(), what.c_str());
    std::exit(1);
}

// Runs the registered op's InferShape and tiling function for these input shapes and attrs.
inline OpTilingResult RunOpTiling(const std::string& type, const std::vector<gert::Shape>& inputs,
                                  const std::vector<double>& attrs = {}) {
    auto it = ops::OpRegistry().find(type);
    if (it == ops::OpRegistry().end()) {
        OpHostFailure(type, "no op of this type was registered with OP_ADD (link its op_host file)");
    }
    std::unique_ptr<ops::OpDef> def = it->second();
    if (inputs.size() != def->InputNum()) {
        OpHostFailure(type, "the op declares " + std::to_string(def->InputNum()) + " inputs, got " +
                                std::to_string(inputs.size()) + " shapes");
    }
    if (attrs.size() != def->AttrNum()) {
        OpHostFailure(type, "the op declares " + std::to_string(def->AttrNum()) + " attributes, got " +
                                std::to_string(attrs.size()));
    }
    OpTilingResult result;
    gert::InferShapeContext infer(inputs, def->OutputNum(), attrs);
    if (def->InferShape() == nullptr || def->InferShape()(&infer) != ge::GRAPH_SUCCESS) {
        OpHostFailure(type, "InferShape is missing or failed");
    }
    result.outputs = infer.Outputs();
    std::vector<gert::StorageShape> ins, outs;
    for (const gert::Shape& s : inputs) {
        ins.emplace_back(s);
    }
    for (const gert::Shape& s : result.outputs) {
        outs.emplace_back(s);
    }
    gert::TilingContext ctx(ins, outs, attrs);
    if (def->AICore().Tiling() == nullptr) {
        OpHostFailure(type, "no tiling function (AICore().SetTiling)");
    }
    if (def->AICore().Tiling()(&ctx) != ge::GRAPH_SUCCESS) {
        OpHostFailure(type, "the tiling function returned a failure");
    }
    gert::TilingData* raw = ctx.GetRawTilingData();
    if (raw->GetDataSize() == 0 || raw->GetDataSize() > raw->GetCapacity()) {
        OpHostFailure(type, "the tiling function set a data size of " + std::to_string(raw->GetDataSize()) +
                                " bytes (SetDataSize after SaveToBuffer; capacity " +
                                std::to_string(raw->GetCapacity()) + ")");
    }
    if (!ctx.BlockDimSet()) {
        OpHostFailure(type, "the tiling function never called SetBlockDim");
    }
    result.tiling.assign(raw->Bytes().begin(), raw->Bytes().begin() + static_cast<long>(raw->GetDataSize()));
    result.blockDim = ctx.GetBlockDim();
    result.tilingKey = ctx.GetTilingKey();
    for (size_t w : ctx.WorkspaceSizes()) {
        result.workspaceBytes += w;
    }
    return result;
}

}  // namespace fusedsl_cpu
