"""k.save(path) never deletes or overwrites what fusedsl did not write (regression: k.save(".")
once renamed the current directory away and deleted it)."""
import json
import os

import pytest

import fusedsl as fs


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


@pytest.fixture(scope="module")
def k():
    return abs_add_relu.compile(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"))


def _assert_user_located(exc_info):
    msg = str(exc_info.value)
    assert "test_project_save.py:" in msg, msg
    assert "backend_ascendc" not in msg and "project_writer" not in msg


def test_save_dot_refuses_and_keeps_the_current_directory(k, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.bin").write_bytes(b"\x00\x01")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(fs.ProjectError) as info:
        k.save(".")
    _assert_user_located(info)
    assert "is not empty and is not a fusedsl project" in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "sub"]
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "sub" / "data.bin").read_bytes() == b"\x00\x01"
    # overwrite=True does not make a foreign directory fusedsl's
    with pytest.raises(fs.ProjectError):
        k.save(".", overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "sub"]


def test_new_and_empty_directories_get_a_manifest(k, tmp_path):
    out = k.save(str(tmp_path / "new" / "proj"))
    manifest = json.loads(open(os.path.join(out, ".fusedsl-project.json")).read())
    listed = set(manifest["files"])
    assert "main.cpp" in listed and "CMakeLists.txt" in listed
    assert not [n for n in os.listdir(tmp_path / "new") if n.startswith(".fusedsl-")]  # no temp left
    empty = tmp_path / "empty"
    empty.mkdir()
    assert k.save(str(empty)) == str(empty)
    assert (empty / "main.cpp").exists()


def test_overwrite_replaces_only_fusedsl_files(k, tmp_path):
    out = tmp_path / "proj"
    k.save(str(out))
    (out / "my_notes.md").write_text("keep me")
    with pytest.raises(fs.ProjectError) as info:
        k.save(str(out))
    _assert_user_located(info)
    assert "overwrite=True" in str(info.value)
    k.save(str(out), overwrite=True)
    assert (out / "my_notes.md").read_text() == "keep me"
    # a file the user edited is theirs now: refused, and left as it is
    (out / "main.cpp").write_text("// my edits\n")
    with pytest.raises(fs.ProjectError) as info:
        k.save(str(out), overwrite=True)
    assert "main.cpp (edited since fusedsl wrote it)" in str(info.value)
    assert (out / "main.cpp").read_text() == "// my edits\n"


def test_bad_paths_give_project_errors(k, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    with pytest.raises(fs.ProjectError) as info:
        k.save(str(f))
    _assert_user_located(info)
    assert "is not a directory" in str(info.value) and f.read_text() == "x"
    with pytest.raises(fs.ProjectError) as info:
        k.save(str(f / "below"))          # a file where a folder should be
    _assert_user_located(info)
    with pytest.raises(fs.ProjectError):
        k.save("bad\0name")
    with pytest.raises(fs.ProjectError):
        k.save("")
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(str(ro), os.W_OK):   # root ignores the mode bits; nothing to check then
            return
        with pytest.raises(fs.ProjectError) as info:
            k.save(str(ro / "proj"))
        assert "cannot write the project" in str(info.value)
    finally:
        os.chmod(ro, 0o700)
