"""A loop run by a framework (scripts/site-packages/minitrain.py, a stand-in for Lightning's
Trainer): the user's script calls trainer.fit() once; the framework loops, pulls the user's
generator through its fetcher and calls the user's training_step and hooks back. Auto must trace
main (adopted at its trainer.fit line when the loop is found), the callbacks the framework calls
(training_step, the overridden on_train_batch_end), the generator, and not the helper that
training_step calls, directly or through another package (layerlib.py, as PyG calls a user's
message()), nor what ran before the loop (configure_optimizers).
"torch": a torch model and SGD, the step called as opt.step(closure); else the step is
announced through gnnprof's hook and this runs on any CPython with a tracer.
Needs scripts/site-packages on PYTHONPATH.

"own": the user's own loop, stepping through the framework's optimizer wrapper (library frames,
as accelerate's or DeepSpeed's, none running the training loop): nothing called back.
"engine": ignite's shape, the library's one loop calling the user's step function (which steps
the optimizer itself): the loop is the library's, engine_main's run line, the step function a
callback.
"search": own_loop run twice by a library's trial loop (a hyperparameter search): still the
user's own loop.
"manual": manual optimization, as Lightning's: the user's training_step steps the optimizer
through the framework's wrapper; the loop is still the framework's.
"module": trainer.fit called at module level, in a script whose module code has a try/except
(CPython 3.12+ puts the handler after the code, jumping back: no loop of the script's).

usage: framework_loop.py STEPS [torch|own|search|manual|engine|module]"""
import sys

import layerlib

try:  # as Lightning scripts import lightning.pytorch, else pytorch_lightning
    import minitrain
except ImportError:
    minitrain = None


class LitModel(minitrain.Module):
    def __init__(self, use_torch, automatic=True):
        self.use_torch = use_torch
        self.automatic_optimization = automatic
        self.total = 0.0
        self.last = -1
        if use_torch:
            import torch
            torch.manual_seed(0)
            self.net = torch.nn.Sequential(torch.nn.Linear(100, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def configure_optimizers(self):
        if not self.use_torch:
            return None
        import torch
        return torch.optim.SGD(self.net.parameters(), lr=1e-4)

    def helper(self, batch):
        return sum(batch) / len(batch)

    def training_step(self, batch, index):
        if not self.use_torch:
            y = layerlib.propagate(self.helper, batch)  # another package calls helper back
            self.total += y
            if not self.automatic_optimization:
                minitrain.manual_step()
            return y
        import torch
        x = torch.tensor(batch, dtype=torch.float32).view(1, -1)
        loss = self.net(x).pow(2).mean()
        self.total += 1
        return loss

    def on_train_batch_end(self, index):
        self.last = index


def batches(n):
    for i in range(n):
        x = [float(i % 7)] * 100
        yield x


def process(batch, index):
    """The user's step function that an engine calls (ignite's): it steps the optimizer itself."""
    y = sum(batch) / len(batch)
    from gnnprof import _native
    _native.optimizer_step()
    return y  # after the step


def engine_main(n):
    engine = minitrain.Engine(process).run(batches(n))
    print("engine", engine.iterations)


def own_loop(n):
    """The user's own loop, stepping through the library's optimizer wrapper."""
    model = LitModel(False)
    for index, batch in enumerate(batches(n)):
        model.training_step(batch, index)
        minitrain.wrapped_step(lambda: model.on_train_batch_end(index))
    print("own loop", model.total, model.last)


def main(n, use_torch, automatic=True):
    model = LitModel(use_torch, automatic)
    steps = minitrain.Trainer().fit(model, batches(n))
    print("steps", steps, model.total, model.last)


if __name__ == "__main__":
    if sys.argv[2:] == ["own"]:
        own_loop(int(sys.argv[1]))
    elif sys.argv[2:] == ["engine"]:
        engine_main(int(sys.argv[1]))
    elif sys.argv[2:] == ["search"]:
        minitrain.run_trials(own_loop, int(sys.argv[1]), 2)
    elif sys.argv[2:] == ["module"]:
        model = LitModel(False)
        steps = minitrain.Trainer().fit(model, batches(int(sys.argv[1])))
        print("steps", steps, model.total, model.last)
    else:
        main(int(sys.argv[1]), sys.argv[2:] == ["torch"], sys.argv[2:] != ["manual"])
