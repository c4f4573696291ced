# SPDX-License-Identifier: Apache-2.0
"""The loop the Python examples share: epochs of a ferry pipeline into a torch classifier, the
test accuracy after each, and the report at the end (the training pipeline's stats table, the
failures of both pipelines, the final accuracy)."""
import time

import torch
from torch import nn


def evaluate(model, pipe, to_model):
    """The share of `pipe`'s items (batches `to_model` turns into (x, y)) `model` classifies."""
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in pipe:
            x, y = to_model(*batch)
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    model.train()
    return correct / max(total, 1)


def fit(model, optimizer, train_pipe, test_pipe, to_model, epochs, unit, digits, schedule=None):
    """`epochs` passes over `train_pipe` (a new order each time), a cross-entropy step per batch
    (and a `schedule` step), one line per epoch: the mean loss, the test accuracy and the
    training `unit`s per second, model step included. Returns the last test accuracy."""
    loss_fn = nn.CrossEntropyLoss()
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        seen, loss_sum = 0, 0.0
        for batch in train_pipe:
            x, y = to_model(*batch)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if schedule is not None:
                schedule.step()
            seen += y.numel()
            loss_sum += loss.item() * y.numel()
        seconds = time.perf_counter() - start
        accuracy = evaluate(model, test_pipe, to_model)
        print(f"epoch {epoch}/{epochs}  loss {loss_sum / max(seen, 1):.{digits}f}  "
              f"test accuracy {accuracy:.{digits}f}  {seen / seconds:.0f} {unit}/s", flush=True)
    return accuracy


def report(train_pipe, test_pipe, accuracy, digits, after=""):
    """Prints the training pipeline's stats, the failures and the final accuracy (then `after`),
    closes both pipelines; the exit code: 0 where nothing failed."""
    print(train_pipe.stats())
    failures = train_pipe.failures() + test_pipe.failures()
    print(f"failures: {len(failures)}")
    for f in failures[:5]:
        print(f"  {f.stage}: {f.input}: {f.message}")
    print(f"final test accuracy {accuracy:.{digits}f}{after}")
    train_pipe.close()
    test_pipe.close()
    return 0 if not failures else 1
