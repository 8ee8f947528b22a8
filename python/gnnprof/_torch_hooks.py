"""What gnnprof learns from torch's Python side.

With the op observer running: torch.nn.Module calls, told to it. The observer sees torch's
ops, not the model's calls: an op on tensors that need no grad (the input's dropout, the first
layer's gather and aggregation before any parameter is used) looked like the loop's own work
("ops (no grad)", data). With the thread's module calls known, every op inside one is the
forward's ("forward (no grad)" under no_grad). torch's global forward hooks are the package's C
functions themselves: no Python frame per module call.

Without it (the process loaded a torch other than the one gnnprof was built against, e.g. a
pip wheel of torch 2.x): the phases from Python instead, so that the user still gets
iterations, the training loop's line table (auto selection hangs on the optimizer's step) and
forward / backward / optimizer / DataLoader stages, without ops, copies, gathers or backward
charged to forward lines.
"""
import functools
import sys
import threading


def install(native, config):
    """After `import torch`: module hooks for the op observer, or the Python-side phases where
    there is none; once per process (a reloaded package finds them in place). Returns what was
    done (for the profile's notes and the tests)."""
    done = getattr(native, "torch_hooks", None)
    if done is not None:
        return done
    native.torch_hooks = done = _install(native, config)
    return done


def _install(native, config):
    state = native.torch_state()
    if state == -2:
        native.note_collector("torch-python", False, "the preload's look for torch took over 10 s: no module hooks "
                              "and no Python-side phases")
        return "busy"
    if state == 2:
        return install_fallback(native, config)
    if state != 1:
        return "no observer"
    if not config.flag("GNNPROF_TORCH_MODULES", True):
        return "off"
    import torch.nn.modules.module as module
    pre = getattr(module, "register_module_forward_pre_hook", None)
    post = getattr(module, "register_module_forward_hook", None)
    if pre is None or post is None:
        return "no global hooks"
    enter, leave = native.module_enter, native.module_exit
    compiling = _compiling_test()
    if compiling is not None:
        # torch.compile traces hooks with the module: one that does nothing while it traces adds
        # no graph break (the compiled graph's ops are not forward's then: not seen here).
        def enter(mod, args, _enter=native.module_enter):
            if not compiling():
                _enter()

        def leave(mod, args, out, _leave=native.module_exit):
            if not compiling():
                _leave()
    pre(enter)
    try:
        post(leave, always_call=True)  # torch >= 2.1: also when forward raises
    except TypeError:
        post(leave)  # a forward that raises leaves the count to the next step
    _wrap_backward(native)
    _wrap_grad_clip(native)
    _wrap_checkpoint(native)
    _wrap_save(native)
    return "installed"


def _compiling_test():
    """torch.compile's "am I tracing?" (torch >= 2.0), or None (torch 1.x: no compile, and the
    hooks are the C functions themselves)."""
    import torch
    test = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if test is not None:
        return test
    if not hasattr(torch, "compile"):
        return None

    def dynamo_compiling():  # torch 2.0-2.2: only once dynamo is imported can it be tracing
        dynamo = sys.modules.get("torch._dynamo")
        return dynamo is not None and dynamo.is_compiling()
    return dynamo_compiling


def _bracket(fn, signal):
    """fn, with signal(True) before each call and signal(False) after it, however it ends."""
    @functools.wraps(fn)
    def bracketed(*args, **kwargs):
        signal(True)
        try:
            return fn(*args, **kwargs)
        finally:
            signal(False)
    return bracketed


def _wrap_backward(native):
    """torch.autograd.backward (Tensor.backward calls it), told to the observer: the loop's
    backward phase spans the call and ends when it returns, so the Python after it (a
    scheduler's step, the next micro-batch's preparation) is not backward."""
    import torch
    torch.autograd.backward = _bracket(torch.autograd.backward, native.backward_call)


def _wrap_grad_clip(native):
    """torch.nn.utils' clip_grad_norm_ / clip_grad_value_, told to the observer: a scope of
    their own ("clip_grad"). Their ops need no grad and run after the backward: left alone they
    were the loop's data work."""
    import torch.nn.utils as utils
    import torch.nn.utils.clip_grad as clip_grad
    for name in ("clip_grad_norm_", "clip_grad_value_"):
        fn = getattr(clip_grad, name, None)
        if fn is None:
            continue
        wrapper = _bracket(fn, native.grad_clip)
        setattr(clip_grad, name, wrapper)
        if getattr(utils, name, None) is fn:
            setattr(utils, name, wrapper)


def _wrap_checkpoint(native):
    """torch.utils.checkpoint.checkpoint (checkpoint_sequential calls it): the checkpointed
    function's second call, the recomputation during backward, is a stage of its own,
    "checkpoint recompute", inside backward. Else nothing says that backward's time includes
    the forward run again (the recomputed ops are nested in a backward node's)."""
    try:
        import torch.utils.checkpoint as cp
    except Exception:
        return
    fn = getattr(cp, "checkpoint", None)
    if fn is None or getattr(fn, "_gnnprof_wrapped", False):
        return
    recompute = native.Stage("checkpoint recompute")  # category user: a part of backward, not more compute
    compiling = _compiling_test()

    @functools.wraps(fn)
    def checkpoint(function, *args, **kwargs):
        if compiling is not None and compiling():
            return fn(function, *args, **kwargs)  # torch.compile handles checkpoint itself
        calls = [0]

        def run(*a, **k):
            calls[0] += 1
            if calls[0] == 1:
                return function(*a, **k)
            with recompute:
                return function(*a, **k)
        return fn(run, *args, **kwargs)
    checkpoint._gnnprof_wrapped = True
    cp.checkpoint = checkpoint


def _wrap_save(native):
    """torch.save, a stage of its own ("torch.save", category io): a checkpoint written every N
    steps or each epoch was time in no stage (an iteration slower for no named reason), or its
    tensors' ops were the loop's data work."""
    import torch
    fn = getattr(torch, "save", None)
    if fn is None or getattr(fn, "_gnnprof_wrapped", False):
        return
    stage = native.Stage("torch.save", "io")

    @functools.wraps(fn)
    def save(*args, **kwargs):
        with stage:
            return fn(*args, **kwargs)
    save._gnnprof_wrapped = True
    torch.save = save
    serialization = sys.modules.get("torch.serialization")
    if serialization is not None and getattr(serialization, "save", None) is fn:
        serialization.save = save


class _Phases(threading.local):
    def __init__(self):
        self.modules = 0       # Module calls open on this thread
        self.forward = None    # the forward stage it opened, while open
        self.steps = 0         # optimizer steps open (a wrapper's around its inner one's)
        self.backward = 0


def install_fallback(native, config):
    """The phases from torch's Python API: the outermost Module call is "forward" ("forward (no
    grad)" under no_grad), torch.autograd.backward "backward", an optimizer's step "optimizer"
    (its end ends an iteration; its start is auto line selection's trigger), a DataLoader's
    __next__ its `enumerate(DataLoader)#...` stage. Every wrapper leaves the host's behaviour
    as it was: arguments, results and exceptions pass through."""
    if not config.flag("GNNPROF_TORCH_PYTHON", True):
        return "fallback off"
    import torch
    import torch.nn.modules.module as module
    import torch.optim.optimizer as optimizer
    import torch.utils.data.dataloader as dataloader

    tls = _Phases()
    compiling = _compiling_test() or (lambda: False)
    stages = {"forward": native.Stage("forward"), "forward (no grad)": native.Stage("forward (no grad)"),
              "backward": native.Stage("backward"), "optimizer": native.Stage("optimizer")}
    marks = {"open": False}  # an iteration begun (at the first forward, then at each step's end)
    # The loop's thread: the main thread at its first mark, or the first thread to step an
    # optimizer while the loop's thread has marked once at most (a sanity forward on the main
    # thread, then training in a threading.Thread). Its marks (2: for good).
    loop = {"thread": None, "marks": 0}

    def on_loop_thread(step):
        me = threading.current_thread()
        if loop["thread"] is None or (step and loop["thread"] is not me and loop["marks"] < 2):
            loop["thread"], loop["marks"] = me, 0
        return loop["thread"] is me

    def mark():
        native.step()
        loop["marks"] += 1
        marks["open"] = True

    def close_stale_forward():
        # A forward that raised on a torch without always_call hooks left its stage open.
        if tls.forward is not None:
            tls.forward.__exit__(None, None, None)
            tls.forward = None
        tls.modules = 0

    def module_pre(mod, args):
        if compiling():
            return
        tls.modules += 1
        if tls.modules == 1 and tls.steps == 0 and tls.backward == 0:
            grad = torch.is_grad_enabled()
            if grad and not marks["open"] and threading.current_thread() is threading.main_thread() and on_loop_thread(False):
                mark()
            tls.forward = stages["forward" if grad else "forward (no grad)"]
            tls.forward.__enter__()

    def module_post(mod, args, out):
        if compiling():
            return
        if tls.modules > 0:
            tls.modules -= 1
        if tls.modules == 0 and tls.forward is not None:
            tls.forward.__exit__(None, None, None)
            tls.forward = None

    module.register_module_forward_pre_hook(module_pre)
    try:
        module.register_module_forward_hook(module_post, always_call=True)
    except TypeError:
        module.register_module_forward_hook(module_post)

    backward = torch.autograd.backward

    @functools.wraps(backward)
    def gnnprof_backward(*args, **kwargs):
        if tls.backward or tls.steps:
            return backward(*args, **kwargs)
        close_stale_forward()
        tls.backward += 1
        stages["backward"].__enter__()
        try:
            return backward(*args, **kwargs)
        finally:
            stages["backward"].__exit__(None, None, None)
            tls.backward -= 1

    torch.autograd.backward = gnnprof_backward

    def wrap_step(step):
        if getattr(step, "_gnnprof_step", False):
            return step

        @functools.wraps(step)
        def gnnprof_step(*args, **kwargs):
            if tls.steps:  # a wrapper's inner optimizer (ZeroRedundancyOptimizer, Lookahead)
                return step(*args, **kwargs)
            close_stale_forward()
            tls.steps += 1
            main = on_loop_thread(True)
            if main:
                native.optimizer_step()  # auto line selection: the frame calling step() is the loop
            stages["optimizer"].__enter__()
            try:
                return step(*args, **kwargs)
            finally:
                stages["optimizer"].__exit__(None, None, None)
                tls.steps -= 1
                if main:
                    mark()

        gnnprof_step._gnnprof_step = True
        return gnnprof_step

    # Each optimizer class's step is wrapped once, where torch wraps it for its profiler
    # (1.13: _hook_for_profile; 2.x: _patch_step_function), so subclasses' own steps are too.
    for name in ("_patch_step_function", "_hook_for_profile"):
        patch = getattr(optimizer.Optimizer, name, None)
        if patch is None:
            continue

        def patched(self, _patch=patch):
            _patch(self)
            cls = type(self)
            cls.step = wrap_step(cls.step)

        functools.update_wrapper(patched, patch)
        setattr(optimizer.Optimizer, name, patched)
        break

    base = dataloader._BaseDataLoaderIter
    next_ = base.__next__
    loader_stages = {}

    @functools.wraps(next_)
    def gnnprof_next(self):
        cls = type(self).__name__
        st = loader_stages.get(cls)
        if st is None:
            st = loader_stages[cls] = native.Stage(f"enumerate(DataLoader)#{cls}.__next__")
        st.__enter__()
        try:
            return next_(self)
        finally:
            st.__exit__(None, None, None)

    base.__next__ = gnnprof_next
    _wrap_save(native)
    native.note_collector("torch-python", True,
                          "the op observer is off (torch-ops says why): forward, backward, optimizer and DataLoader "
                          "stages and iteration marks come from torch's Python hooks; no ops, copies, gathers or "
                          "backward charged to forward lines")
    return "fallback"
