"""Backbones for the transfer task: a small CNN, an MLP and a ViT (the N = 2, linear-only case),
and a transformers ConvNeXt."""

from __future__ import annotations

import torch
from torch import nn

# Layers each backbone adapts (the stem conv sees 1 channel, so it stays frozen) and its head.
ADAPTED = {
    "cnn": r"conv[234]",
    "mlp": r"fc[12]",
    "vit": r"backbone\.layers\.\d+\.(attention\.[qkvo]_proj|mlp\.fc[12])",
    # pointwise (Linear) layers and the dense 2x2 downsampling convs; the depthwise 7x7 convs stay
    # frozen for every method: peft 0.21's LoRA family takes a grouped conv only at a rank that is
    # a multiple of its groups (r = channels: a full per-channel update, not a low-rank one), so
    # the one layer set all methods can adapt at a low rank leaves them out (README, Deviations).
    "convnext": r".*(pwconv1|pwconv2|downsampling_layer\.1)",
}
HEAD = {"cnn": "head", "mlp": "head", "vit": "head", "convnext": "head"}
LINEAR_ONLY = ("mlp", "vit")  # every adapted weight is 2-D: FLoRA is A G B^T there


class SmallCNN(nn.Module):
    """Four 3x3 convs (1-32-32-64-64), one pooling, global average pooling, a linear head."""

    def __init__(self, n_classes: int = 5, channels: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv4 = nn.Conv2d(64, 64, 3, padding=1)
        self.head = nn.Linear(64, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        x = nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.conv4(torch.relu(self.conv3(x))))
        return self.head(x.mean(dim=(2, 3)))


class MLP(nn.Module):
    """Flattened 8x8 digits through two 128-unit hidden layers."""

    def __init__(self, n_classes: int = 5, in_features: int = 64, hidden: int = 128):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc2(torch.relu(self.fc1(x.flatten(1)))))
        return self.head(x)


class ConvNeXt(nn.Module):
    """transformers' ConvNeXt (built from a config, or read from a local checkpoint folder)."""

    def __init__(
        self, n_classes: int, depths: tuple[int, ...], dims: tuple[int, ...], checkpoint: str = ""
    ):
        super().__init__()
        from transformers import ConvNextConfig, ConvNextModel

        if checkpoint:
            try:
                self.backbone = ConvNextModel.from_pretrained(checkpoint, local_files_only=True)
            except (OSError, ValueError) as exc:
                raise ValueError(
                    f"checkpoint {checkpoint} is not a transformers ConvNeXt folder: {exc}"
                ) from None
        else:
            config = ConvNextConfig(
                num_stages=len(depths), depths=list(depths), hidden_sizes=list(dims), num_channels=3
            )
            self.backbone = ConvNextModel(config)
        self.head = nn.Linear(self.backbone.config.hidden_sizes[-1], n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(pixel_values=x).pooler_output)


class ViT(nn.Module):
    """A transformers ViT built from a config: 2x2 patches, two blocks, width 32 (ViT-shaped)."""

    def __init__(self, n_classes: int, image_size: int, channels: int = 1, width: int = 32):
        super().__init__()
        from transformers import ViTConfig, ViTModel

        config = ViTConfig(
            image_size=image_size, patch_size=2, num_channels=channels, hidden_size=width,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=2 * width,
        )  # fmt: skip
        self.backbone = ViTModel(config, add_pooling_layer=False)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(pixel_values=x).last_hidden_state[:, 0])


def reset_head(model: nn.Module, n_classes: int, seed: int) -> None:
    """A fresh head for a new label space (deterministic in the seed)."""
    torch.manual_seed(seed)
    model.head = nn.Linear(model.head.in_features, n_classes)
