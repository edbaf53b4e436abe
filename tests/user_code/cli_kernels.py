import fusedsl as fs


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def plain_chain(x, alpha):
    return fs.leaky_relu(x * 2.0 + 1.0, alpha)
