"""A small single-device training script written for PyTorch/XLA (the bundled legacy example)."""
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

os.environ["PJRT_DEVICE"] = "TPU"


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


def main() -> None:
    torch.manual_seed(0)
    device = xm.xla_device()
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(64, 16)
    target = data.sum(dim=1, keepdim=True)
    for step in range(20):
        x, y = data.to(device), target.to("xla")
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        # cut and run the lazy graph for this step
        xm.mark_step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    xm.wait_device_ops()
    predict = torch.compile(model, backend="openxla")
    with torch.no_grad():
        print(predict(data[:2].to(device)))
    torch_xla.sync()


if __name__ == "__main__":
    main()
