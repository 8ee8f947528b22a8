"""torch.nn.Module calls, told to gnnprof's op observer.

The observer sees torch's ops, not the model's calls: an op on tensors that need no grad (the
input's dropout, the first layer's gather and aggregation before any parameter is used) looked
like the loop's own work ("ops (no grad)", data). With the thread's module calls known, every op
inside one is the forward's ("forward (no grad)" under no_grad). torch's global forward hooks
are the package's C functions themselves: no Python frame per module call.
"""


def install(native, config):
    """After `import torch`, when the op observer runs in this process: the module hooks.
    Returns what was done, for the tests."""
    if not config.flag("GNNPROF_TORCH_MODULES", True):
        return "off"
    if native.torch_state() != 1:
        return "no observer"
    import torch.nn.modules.module as module
    pre = getattr(module, "register_module_forward_pre_hook", None)
    post = getattr(module, "register_module_forward_hook", None)
    if pre is None or post is None:
        return "no global hooks"
    pre(native.module_enter)
    try:
        post(native.module_exit, always_call=True)  # torch >= 2.1: also when forward raises
    except TypeError:
        post(native.module_exit)  # a forward that raises leaves the count to the next step
    return "installed"
