"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`mcl-nf train --help`). Bounds stand beside their fields
(`Annotated[int, Ge(1)]`, checked by runtime.check_bounds); `validate` adds the checks that involve
several fields or a set of names. Presets are plain instances; a command-line flag overrides the
preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, MinLen, RunConfig, check_bounds

SIGNALS = ("image", "audio", "video", "nerf")
METHODS = ("Mean", "OL", "Naive", "EWC", "ER", "MOL", "Modules-random", "MCL-NF", "MCL-NF+FIM")
"""Every method a run can fit (testtime.py); `--methods` picks some for `train`."""


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    signal: str = "image"
    """Signal family of `train`: image (grid x grid blocks), audio or video (time segments), or nerf
    (toy city of grid x grid blocks, one sub-task per block's cameras)."""
    bench_signals: Annotated[tuple[str, ...], MinLen(1)] = ("image", "audio")
    """Signal families the benchmark runs, each over every seed."""
    audio_length: Annotated[int, Ge(1)] = 1024
    """Samples per audio clip."""
    time_segments: Annotated[int, Ge(1)] = 4
    """Audio and video sub-tasks: the clip is cut into this many equal time segments, one module each."""
    video_frames: Annotated[int, Ge(1)] = 8
    """Frames per video (each image_size x image_size RGB); a multiple of time_segments."""
    image_size: Annotated[int, Ge(1)] = 32
    """Side of the square RGB signals, in pixels."""
    grid: Annotated[int, Ge(1)] = 2
    """Sub-tasks per side: the signal (image, or NeRF city) is cut into grid x grid blocks, one
    module each (t = grid^2)."""
    image_folder: str = ""
    """Folder of PNG/JPEG images replacing the procedural images (empty: procedural; audio
    unaffected). `mcl-nf photos --out DIR` writes scikit-image's sample photographs into DIR."""
    crop_side: Annotated[int, Ge(0)] = 0
    """With --image-folder: 0 fits every image's centre square resized to image_size; N > 0 resizes
    it to N pixels and fits image_size crops of it (fresh random crops of the training images every
    meta-step; n_test fixed random crops of the held-out images)."""
    test_images: Annotated[int, Ge(0)] = 0
    """With --image-folder: images held out (0: n_test), a random choice per seed (every seed
    holds out its own images; the same seed always the same ones)."""
    nerf_resolution: Annotated[int, Ge(1)] = 8
    """NeRF: pixels per side of every view (one ray per pixel)."""
    nerf_views: Annotated[int, Ge(1)] = 4
    """NeRF: training views per city block (cameras on a sphere around the block), fitted."""
    nerf_test_views: Annotated[int, Ge(1)] = 2
    """NeRF: held-out views per block, between the training views; NeRF PSNR is measured on them."""
    nerf_samples: Annotated[int, Ge(1)] = 32
    """NeRF: samples per ray (midpoints of equal bins between the ray's near and far bounds)."""
    nerf_rays: Annotated[int, Ge(1)] = 64
    """NeRF: random rays per sub-task in each SGD step, at meta-training and test time (all if
    fewer)."""
    hidden: Annotated[int, Ge(1)] = 64
    """Hidden width of each module's SIREN (two hidden layers)."""
    single_hidden: Annotated[int, Ge(1)] = 128
    """Hidden width of the single-MLP baselines (about the parameter count of all modules)."""
    omega0: Annotated[float, Gt(0)] = 30.0
    """SIREN frequency omega_0 of the first layer."""
    inner_steps: Annotated[int, Ge(0)] = 3
    """MAML inner-loop SGD steps S during meta-training."""
    inner_lr: Annotated[float, Gt(0)] = 1e-2
    """Inner-loop and test-time SGD learning rate alpha."""
    first_order: bool = False
    """First-order MAML (no backpropagation through the inner loop)."""
    meta_steps: Annotated[int, Ge(1)] = 100
    """Outer (meta) updates."""
    meta_batch: Annotated[int, Ge(1)] = 4
    """Signals per meta update."""
    meta_lr: Annotated[float, Gt(0)] = 1e-4
    """Adam learning rate eta of the meta update."""
    n_test: Annotated[int, Ge(1)] = 4
    """Held-out signals fitted at test time."""
    test_points: Annotated[int, Ge(0)] = 0
    """Bound on the points (pixels, samples, or ray samples) of the held-out signals fitted at once:
    they are fitted in chunks of as many as fit (0: all n_test at once). Bounds GPU memory."""
    eval_steps: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (1, 16, 128)
    """Test-time SGD steps per sub-task at which whole-signal PSNR is measured."""
    fim_lambda: Annotated[float, Ge(0)] = 1.0
    """Strength lambda of the Fisher-information weights (0 gives plain MSE)."""
    fim_damping: Annotated[float, Gt(0)] = 0.01
    """Damping eps of the inverted batch Fisher in the information gain, in units of its mean."""
    ewc_lambda: Annotated[float, Ge(0)] = 100.0
    """EWC penalty strength."""
    replay_points: Annotated[int, Ge(0)] = 64
    """Experience replay: points kept from each finished sub-task."""
    methods: tuple[str, ...] = ()
    """Methods `train` meta-trains and fits (empty: all of Mean, OL, Naive, EWC, ER, MOL,
    Modules-random, MCL-NF, MCL-NF+FIM); `bench` always fits all of them."""


PHOTOS = "runs/skimage-photos"
"""Where the paper preset reads photographs; `bench` writes scikit-image's there when missing."""

PRESETS: dict[str, Config] = {
    "quick": Config(),
    # towards the scale at which the review measured the step-1 effect (600 x 8), on real
    # photographs: 400 meta-steps is what 3 seeds x 2 families x 3 meta-trainings fit in about
    # 36 min on one core (measured per phase)
    "paper": Config(
        name="paper",
        out="runs/paper",
        meta_steps=400,
        meta_batch=8,
        image_folder=PHOTOS,
        crop_side=96,
        test_images=3,
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        image_size=64,
        grid=4,
        hidden=256,
        single_hidden=512,
        inner_steps=5,
        meta_steps=20_000,
        meta_batch=16,
        meta_lr=3e-5,
        n_test=100,
        eval_steps=(1, 16, 128, 4096),
        bench_signals=("image", "audio", "video", "nerf"),
        audio_length=16384,
        time_segments=8,
        nerf_resolution=16,
        nerf_views=4,
        nerf_test_views=2,
        nerf_samples=64,
        nerf_rays=32,
        test_points=8_000_000,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.crop_side and cfg.crop_side < cfg.image_size:
        raise ValueError(f"crop_side {cfg.crop_side} must be >= image_size {cfg.image_size}")
    for signal in (cfg.signal, *cfg.bench_signals):
        if signal not in SIGNALS:
            raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    for field in ("audio_length", "video_frames"):
        if getattr(cfg, field) % cfg.time_segments:
            raise ValueError(
                f"{field} {getattr(cfg, field)} does not split into "
                f"time_segments={cfg.time_segments} equal segments"
            )
    for method in cfg.methods:
        if method not in METHODS:
            raise ValueError(f"methods: {method!r} is not one of {', '.join(METHODS)}")
    if cfg.image_size % cfg.grid:
        raise ValueError(
            f"image_size {cfg.image_size} does not split into grid={cfg.grid} equal blocks per side"
        )
    return cfg
