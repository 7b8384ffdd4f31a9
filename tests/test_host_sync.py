"""The training-loop host-sync analysis (lints/host_sync.py): precise, never noisy."""

from __future__ import annotations

import ast
import textwrap

from xla2tpu.detect.positions import Positions
from xla2tpu.detect.lints.host_sync import host_syncs


def _found(source: str) -> list[tuple[str, str]]:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    positions = Positions(source, tree)
    return [(positions.code(s.node), s.what) for statement in tree.body for s in host_syncs(statement)]


def test_syncs_in_the_step_loop_are_found() -> None:
    assert _found(
        """
        def train(model, loader, optimizer, losses):
            for x, y in loader:
                loss = model(x).sub(y).pow(2).mean()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                print(loss)
                total = float(loss)
                if loss < 0.1:
                    break
                grads = [p.grad.cpu() for p in model.parameters()]
        """
    ) == [
        ("loss.item()", "`.item()`"),
        ("print(loss)", "`print()` of the loss"),
        ("float(loss)", "`float()` of the loss"),
        ("loss < 0.1", "a test on the loss"),
        ("p.grad.cpu()", "`.cpu()`"),
    ]


def test_a_sync_under_a_periodic_test_is_not_reported() -> None:
    assert _found(
        """
        def train(model, loader, opt):
            for step, x in enumerate(loader):
                loss = model(x)
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    print(f"loss {loss.item()}")
                else:
                    last = loss.tolist()
        """
    ) == [("loss.tolist()", "`.tolist()`")]


def test_outside_the_step_loop_nothing_is_reported() -> None:
    assert _found(
        """
        import torch_xla.core.xla_model as xm

        def train(model, loader, optimizer, epochs):
            for epoch in range(epochs):
                for x in loader:
                    loss = model(x)
                    loss.backward()
                    xm.optimizer_step(optimizer)
                print(epoch, loss.item())
            return loss.item()

        def evaluate(model, loader):
            for x in loader:
                print(model(x).argmax().item())
        """
    ) == []


def test_a_nested_function_is_not_part_of_the_loop() -> None:
    assert _found(
        """
        def train(model, loader, scaler, optimizer, log):
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                log(lambda: model.weight.cpu())
        """
    ) == []


def test_a_scheduler_step_is_not_a_training_step() -> None:
    assert _found(
        """
        def run(values, scheduler):
            for v in values:
                scheduler.step()
                print(v.item())
        """
    ) == []


def test_hits_come_in_source_order() -> None:
    # CPython's tree lists a class's decorators after its body and a conditional
    # expression's test first; an `if` test that is itself a sync is found as a test and
    # as a call (as on the LibCST tree before). A function's decorators, defaults and body
    # are outside the loop.
    assert _found(
        """
        def train(model, loader, opt):
            for x in loader:
                loss = model(x)
                loss.backward()
                opt.step()
                @register(loss.cpu())
                class Hook:
                    last = loss.item()
                    def hook(self, a=loss.item()):
                        return a.item()
                y = loss.item() if loss.tolist() else loss.numpy()
                if loss.item():
                    print((loss), end="")
        """
    ) == [
        ("loss.cpu()", "`.cpu()`"),
        ("loss.item()", "`.item()`"),
        ("loss.item()", "`.item()`"),
        ("loss.tolist()", "`.tolist()`"),
        ("loss.numpy()", "`.numpy()`"),
        ("loss.item()", "`.item()`"),
        ("loss.item()", "`.item()`"),
        ("print((loss), end=\"\")", "`print()` of the loss"),
    ]
