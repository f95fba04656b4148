"""Paths on disk as tidy tables: one row per (path, time) with columns time, path_id, <variables>.

CSV for interchange, NPZ (same columns as arrays) for speed. Readers validate and raise clear
errors: NaN values, single time points, ragged paths, header/row width mismatches.
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import numpy as np

from .sigkernel import check_paths


def to_table(paths: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(n, L, d) paths and (L,) or (n, L) times -> (n * L, 2 + d) rows [time, path_id, x...]."""
    paths = check_paths(paths)
    n, length, _ = paths.shape
    t = np.broadcast_to(np.asarray(times, dtype=np.float64), (n, length))
    ids = np.repeat(np.arange(n), length)
    return np.column_stack([t.reshape(-1), ids, paths.reshape(n * length, -1)])


def from_table(rows: np.ndarray, names: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Inverse of to_table, sorting by (path_id, time); every path needs the same number of times."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != 2 + len(names):
        raise ValueError(
            f"expected columns time, path_id and {len(names)} variables {names}, got shape {rows.shape}"
        )
    if not np.isfinite(rows).all():
        bad = sorted({(["time", "path_id", *names])[c] for c in np.where(~np.isfinite(rows))[1]})
        raise ValueError(f"NaN or infinite values in column(s) {bad}")
    rows = rows[np.lexsort((rows[:, 0], rows[:, 1]))]
    ids, counts = np.unique(rows[:, 1], return_counts=True)
    if len(set(counts.tolist())) != 1:
        raise ValueError(
            f"every path needs the same number of time points, got counts {sorted(set(counts.tolist()))}"
        )
    length = int(counts[0])
    if length < 2:
        raise ValueError("each path has a single time point; a path needs at least 2")
    n = len(ids)
    return rows[:, 2:].reshape(n, length, -1), rows[:, 0].reshape(n, length), list(names)


def write_paths(path: str | Path, paths: np.ndarray, times: np.ndarray, names: list[str]) -> None:
    """Write a .csv or .npz tidy table."""
    path = Path(path)
    if len(names) != np.asarray(paths).shape[-1]:
        raise ValueError(
            f"{len(names)} variable names for {np.asarray(paths).shape[-1]} path channels"
        )
    table = to_table(paths, times)
    if path.suffix == ".npz":
        np.savez(
            path,
            time=table[:, 0],
            path_id=table[:, 1],
            **{v: table[:, 2 + i] for i, v in enumerate(names)},
        )
    elif path.suffix == ".csv":
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["time", "path_id", *names])
            w.writerows(table.tolist())
    else:
        raise ValueError(f"file must end in .csv or .npz, got {path.name}")


def read_paths(path: str | Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a .csv or .npz tidy table, or an .npz holding an array `paths` of shape
    (paths, times, variables) -> (paths (n, L, d), times (n, L), variable names).

    Every problem (missing file, wrong suffix, unreadable or malformed content) raises a
    ValueError whose message starts with the file's name.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(
            f"{path}: {'a directory, not a file' if path.is_dir() else 'no such file'}"
        )
    try:
        return _read(path)
    except ValueError as exc:
        raise ValueError(f"{path.name}: {exc}") from None
    except (OSError, UnicodeDecodeError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{path.name}: unreadable ({type(exc).__name__}: {exc})") from None


def _read(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    if path.suffix == ".npz":
        if not zipfile.is_zipfile(path):
            raise ValueError("not an .npz archive (written by numpy.savez)")
        with np.load(path, allow_pickle=False) as z:
            if "paths" in z.files:
                return _read_array_npz(z)
            names = [k for k in z.files if k not in ("time", "path_id")]
            if "time" not in z.files or "path_id" not in z.files:
                raise ValueError(
                    f"needs an array 'paths' (paths, times, variables) or the tidy arrays "
                    f"'time' and 'path_id', has {z.files}"
                )
            cols = [z["time"], z["path_id"], *(z[k] for k in names)]
            if len({c.shape for c in cols}) != 1 or cols[0].ndim != 1:
                raise ValueError(f"arrays must be 1-d of one length, got {[c.shape for c in cols]}")
            rows = np.column_stack(cols)
    elif path.suffix == ".csv":
        with path.open(newline="") as fh:
            table = list(csv.reader(fh))
        if not table:
            raise ValueError("empty file; expected a header time,path_id,<variables>")
        header, *body = table
        if header[:2] != ["time", "path_id"]:
            raise ValueError(f"CSV header must start with time,path_id; got {header[:2]}")
        names = header[2:]
        if not names:
            raise ValueError("the header names no variable after time,path_id")
        if not body:
            raise ValueError("no data rows after the header")
        widths = {len(r) for r in body}
        if widths != {len(header)}:
            raise ValueError(
                f"rows have {sorted(widths)} fields but the header names {len(header)} columns"
            )
        try:
            rows = np.array(body, dtype=np.float64)
        except ValueError:
            line, col = _first_non_numeric(header, body)
            raise ValueError(f"non-numeric value in column {col!r} on line {line}") from None
    else:
        raise ValueError(f"file must end in .csv or .npz, got {path.name}")
    return from_table(rows, names)


def _read_array_npz(z) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The array form of .npz: `paths` (n, L, d); optional `times` ((L,) or (n, L), default
    0..1 evenly) and `names` (d strings, default X0..X{d-1})."""
    extra = sorted(set(z.files) - {"paths", "times", "names"})
    if extra:
        raise ValueError(f"unknown array(s) {extra} beside 'paths' (allowed: times, names)")
    paths = np.asarray(z["paths"])
    if paths.ndim != 3 or paths.shape[1] < 2 or min(paths.shape) < 1:
        raise ValueError(
            f"'paths' must have shape (paths, times >= 2, variables), got {paths.shape}"
        )
    if not np.issubdtype(paths.dtype, np.number):
        raise ValueError(f"'paths' must be numeric, got dtype {paths.dtype}")
    paths = paths.astype(np.float64)
    n, length, d = paths.shape
    if "times" in z.files:
        times = np.asarray(z["times"], dtype=np.float64)
        if times.shape not in ((length,), (n, length)):
            raise ValueError(
                f"'times' must have shape ({length},) or ({n}, {length}), got {times.shape}"
            )
    else:
        times = np.linspace(0.0, 1.0, length)
    times = np.array(np.broadcast_to(times, (n, length)))
    if "names" in z.files:
        names = [str(v) for v in np.asarray(z["names"]).reshape(-1)]
        if len(names) != d or len(set(names)) != d:
            raise ValueError(f"'names' must hold {d} distinct names, got {names}")
    else:
        names = [f"X{k}" for k in range(d)]
    for label, arr in (("paths", paths), ("times", times)):
        if not np.isfinite(arr).all():
            raise ValueError(f"NaN or infinite values in '{label}'")
    if (np.diff(times, axis=1) <= 0).any():
        raise ValueError("'times' must increase strictly along every path")
    return paths, times, names


def _first_non_numeric(header: list[str], body: list[list[str]]) -> tuple[int, str]:
    """(file line, column name) of the first cell that is not a number."""
    for k, row in enumerate(body):
        for name, cell in zip(header, row):
            try:
                float(cell)
            except ValueError:
                return k + 2, name
    return 0, "?"
