"""Molecules without downloads: rdkit's NCI SMILES -> ETKDG + MMFF94 conformers with QM9-like
labels, MMFF94 Langevin trajectories with MD17-like energies and forces, and loaders for the
real QM9 (.xyz files, or the CSV tables of the PyPI wheel `qm9pack`) and MD17 (.npz) formats.

Every generator is a deterministic function of its arguments. Units: Angstrom, kcal/mol, Debye.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import dataclasses
import hashlib
import heapq
import importlib.metadata
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

ELEMENTS = (1, 6, 7, 8, 9)
"""Supported atomic numbers (H, C, N, O, F); row i of every embedding is ELEMENTS[i]."""
SYMBOLS = {"H": 1, "C": 6, "N": 7, "O": 8, "F": 9}
MD_SMILES = {
    "ethanol": "CCO",
    "malonaldehyde": "O=CCC=O",
    "uracil": "O=C1C=CNC(=O)N1",
    "aspirin": "CC(=O)Oc1ccccc1C(=O)O",
}
QM9_PROPS = ("A", "B", "C", "mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "U0", "U", "H")
QM9_PROPS += ("G", "Cv")
KCAL_PER_AMU_A_TO_A_PER_FS2 = 4.184e-4  # acceleration of 1 kcal/mol/A on 1 amu, in A/fs^2
BOLTZMANN_KCAL = 0.0019872041  # kcal/mol/K
E_ANGSTROM_TO_DEBYE = 4.80320
HARTREE_EV = 27.211386
QM9_CSV_COLUMNS = {  # our label -> qm9pack column (Hartree, Hartree, Debye)
    "gap": "HOMO_LUMO_gap_au",
    "u0": "InternalEnergy_0K_au",
    "mu": "Dipole_debye",
}


@dataclasses.dataclass
class Molecule:
    """One geometry: atomic numbers z (n,), positions pos (n, 3), labels, optional forces."""

    z: np.ndarray
    pos: np.ndarray
    y: dict[str, float]
    forces: np.ndarray | None = None


def element_index(z: np.ndarray) -> np.ndarray:
    """Map atomic numbers to embedding rows; an element outside ELEMENTS is an error.

    (The official code maps unknown elements to -1, which silently picks the last row.)
    """
    z = np.asarray(z)
    table = np.full(max(max(ELEMENTS), int(z.max(initial=0))) + 1, -1)
    table[list(ELEMENTS)] = np.arange(len(ELEMENTS))
    idx = table[np.clip(z, 0, None)]
    bad = sorted({int(v) for v in z[(idx < 0) | (z < 0)]})
    if bad:
        raise ValueError(f"atomic number(s) {bad} not supported; expected one of {ELEMENTS}")
    return idx


def check_molecule(z: np.ndarray, pos: np.ndarray, where: str = "molecule") -> None:
    """Atom counts must agree and a molecule needs at least two atoms."""
    if pos.ndim != 2 or pos.shape[1] != 3 or len(z) != len(pos):
        raise ValueError(f"{where}: {len(z)} atomic numbers but positions of shape {pos.shape}")
    if len(z) < 2:
        raise ValueError(f"{where}: a molecule needs at least 2 atoms, got {len(z)}")
    element_index(z)


def nci_smiles(max_heavy: int = 9) -> list[str]:
    """Single-fragment C/N/O/F molecules with at most max_heavy heavy atoms from rdkit's NCI set."""
    from rdkit import Chem, RDConfig, RDLogger

    RDLogger.DisableLog("rdApp.*")
    path = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
    keep = []
    for line in Path(path).read_text().splitlines():
        smi = line.split()[0] if line.strip() else ""
        mol = Chem.MolFromSmiles(smi) if smi else None
        if mol is None or "." in smi or mol.GetNumAtoms() > max_heavy or mol.GetNumAtoms() < 2:
            continue
        if all(a.GetAtomicNum() in ELEMENTS for a in mol.GetAtoms()):
            keep.append(smi)
    return keep


def _rdkit_mol(smiles: str, seed: int):
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"SMILES {smiles!r} does not parse")
    mol = Chem.AddHs(mol)
    params = AllChem.ETKDGv3()
    params.randomSeed = seed
    if AllChem.EmbedMolecule(mol, params) != 0:
        raise ValueError(f"ETKDG could not embed {smiles!r}")
    props = AllChem.MMFFGetMoleculeProperties(mol)
    if props is None:
        raise ValueError(f"MMFF94 has no parameters for {smiles!r}")
    return mol, props


def conformer(smiles: str, seed: int = 0) -> tuple[Molecule, object]:
    """ETKDG embedding + MMFF94 optimisation; labels u0 (raw MMFF energy), gap (EHT), mu (D)."""
    from rdkit.Chem import AllChem, rdEHTTools

    mol, props = _rdkit_mol(smiles, seed)
    ff = AllChem.MMFFGetMoleculeForceField(mol, props)
    ff.Minimize(maxIts=2000)
    pos = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64)
    z = np.array([a.GetAtomicNum() for a in mol.GetAtoms()])
    check_molecule(z, pos, smiles)
    ok, eht = rdEHTTools.RunMol(mol)
    if not ok:
        raise ValueError(f"extended Hueckel failed for {smiles!r}")
    orbitals = np.sort(np.asarray(eht.GetOrbitalEnergies()))
    homo = eht.numElectrons // 2 - 1
    charges = np.array([props.GetMMFFPartialCharge(i) for i in range(len(z))])
    dipole = charges @ (pos - pos.mean(0)) * E_ANGSTROM_TO_DEBYE
    y = {
        "u0": float(ff.CalcEnergy()),
        "gap": float(orbitals[homo + 1] - orbitals[homo]),
        "mu": float(np.linalg.norm(dipole)),
    }
    return Molecule(z, pos, y), mol


@contextlib.contextmanager
def _quiet_stdio():
    """Silence C-level stdout/stderr (the EHT code prints distance warnings for every O-H bond)."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1), os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def qm9_like(n: int, max_heavy: int = 9, hydrogens: bool = True) -> list[Molecule]:
    """The first n usable NCI molecules; u0 has per-element reference energies regressed out.

    hydrogens=False drops the H atoms after the labels are computed (CPU-scale quick mode).
    """
    mols = []
    with _quiet_stdio():
        for smi in nci_smiles(max_heavy):
            if len(mols) == n:
                break
            try:
                mols.append(conformer(smi)[0])
            except ValueError:
                continue
    if len(mols) < n:
        raise ValueError(f"only {len(mols)} usable molecules with <= {max_heavy} heavy atoms")
    counts = np.array([[np.sum(m.z == e) for e in ELEMENTS] for m in mols], dtype=float)
    energy = np.array([m.y["u0"] for m in mols])
    refs = np.linalg.lstsq(counts, energy, rcond=None)[0]
    for m, c in zip(mols, counts):
        m.y["u0"] = float(m.y["u0"] - c @ refs)
    if not hydrogens:
        mols = [Molecule(m.z[m.z != 1], m.pos[m.z != 1], m.y) for m in mols]
    return mols


def mmff_energy_forces(mol, props, pos: np.ndarray) -> tuple[float, np.ndarray]:
    """MMFF94 energy (kcal/mol) and forces -dE/dx (kcal/mol/A) at positions pos."""
    from rdkit.Chem import AllChem

    ff = AllChem.MMFFGetMoleculeForceField(mol, props)
    flat = [float(v) for v in pos.reshape(-1)]
    return float(ff.CalcEnergy(flat)), -np.asarray(ff.CalcGrad(flat)).reshape(-1, 3)


def md_like(
    name: str, n_frames: int, temperature: float = 500.0, stride: int = 10, seed: int = 0
) -> list[Molecule]:
    """MMFF94 Langevin dynamics (BAOAB, 0.5 fs, friction 0.01/fs); one frame every `stride` steps."""
    if name not in MD_SMILES:
        raise ValueError(f"MD molecule must be one of {sorted(MD_SMILES)}, got {name!r}")
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol, props = _rdkit_mol(MD_SMILES[name], seed)
    AllChem.MMFFOptimizeMolecule(mol, maxIters=2000)
    table = Chem.GetPeriodicTable()
    z = np.array([a.GetAtomicNum() for a in mol.GetAtoms()])
    mass = np.array([table.GetAtomicWeight(int(v)) for v in z])[:, None]
    rng = np.random.default_rng(seed)
    dt, gamma, kt = 0.5, 0.01, BOLTZMANN_KCAL * temperature
    sigma_v = np.sqrt(kt / mass * KCAL_PER_AMU_A_TO_A_PER_FS2)  # A/fs
    x = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64)
    v = rng.standard_normal(x.shape) * sigma_v
    _, f = mmff_energy_forces(mol, props, x)
    c1 = np.exp(-gamma * dt)
    frames = []
    for step in range(1, (n_frames + 10) * stride + 1):  # the first 10 frames are equilibration
        v += 0.5 * dt * f / mass * KCAL_PER_AMU_A_TO_A_PER_FS2
        x += 0.5 * dt * v
        v = c1 * v + np.sqrt(1 - c1**2) * sigma_v * rng.standard_normal(x.shape)
        x += 0.5 * dt * v
        e, f = mmff_energy_forces(mol, props, x)
        v += 0.5 * dt * f / mass * KCAL_PER_AMU_A_TO_A_PER_FS2
        if step % stride == 0 and step > 10 * stride:
            frames.append(Molecule(z.copy(), x.copy(), {"energy": e}, f.copy()))
    return frames


def read_qm9_xyz(path: str | Path) -> Molecule:
    """One QM9 .xyz file: atom count, 'gdb <id> <15 properties>', atoms, frequencies, SMILES."""
    try:
        lines = Path(path).read_text().replace("*^", "e").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path}: cannot read as a QM9 .xyz text file ({type(exc).__name__})"
        ) from None
    try:
        n = int(lines[0].split()[0])
    except (IndexError, ValueError):
        raise ValueError(f"{path}: first line must be the atom count") from None
    fields = lines[1].split() if len(lines) > 1 else []
    if len(fields) < 2 + len(QM9_PROPS) or fields[0] != "gdb":
        raise ValueError(f"{path}: line 2 must be 'gdb <id>' and {len(QM9_PROPS)} properties")
    atoms = [ln.split() for ln in lines[2 : 2 + n]]
    if len(atoms) != n or any(len(a) < 4 or a[0] not in SYMBOLS for a in atoms):
        raise ValueError(f"{path}: header says {n} atoms but the atom block does not match")
    if len(lines) > 2 + n and lines[2 + n].split()[0] in SYMBOLS:
        raise ValueError(f"{path}: more atom lines than the {n} the header says")
    z = np.array([SYMBOLS[a[0]] for a in atoms])
    pos = np.array([[float(c) for c in a[1:4]] for a in atoms])
    check_molecule(z, pos, str(path))
    y = {k: float(v) for k, v in zip(QM9_PROPS, fields[2 : 2 + len(QM9_PROPS)])}
    return Molecule(z, pos, y)


def write_qm9_xyz(path: str | Path, mol: Molecule, props: dict[str, float], index: int = 1) -> None:
    """Write a molecule in the QM9 .xyz layout (used by tests and to export generated data)."""
    inv = {v: k for k, v in SYMBOLS.items()}
    head = "\t".join(f"{props.get(k, 0.0):.6f}" for k in QM9_PROPS)
    body = [
        f"{inv[int(zi)]}\t{p[0]:.10f}\t{p[1]:.10f}\t{p[2]:.10f}\t0.0"
        for zi, p in zip(mol.z, mol.pos)
    ]
    text = "\n".join([str(len(mol.z)), f"gdb {index}\t{head}", *body, "0.0", "C\tC", "InChI=1S"])
    Path(path).write_text(text + "\n")


MD17_KEYS = {  # layout -> (atomic numbers, positions, energies, forces); both kcal/mol(/A), A
    "MD17": ("z", "R", "E", "F"),
    "rMD17": ("nuclear_charges", "coords", "energies", "forces"),
}


def md17_file(path: str | Path, molecule: str) -> Path:
    """An MD17 / rMD17 .npz file, or in a folder the one for `molecule` under its standard
    names (md17_<m>.npz, rmd17_<m>.npz, <m>_dft.npz, <m>.npz)."""
    p = Path(path)
    if not p.is_dir():
        return p
    names = (f"md17_{molecule}.npz", f"rmd17_{molecule}.npz", f"{molecule}_dft.npz")
    for name in (*names, f"{molecule}.npz"):
        if (p / name).is_file():
            return p / name
    raise ValueError(f"{path}: no {' / '.join(names)} for md_molecule {molecule!r}")


def read_md17_npz(path: str | Path) -> list[Molecule]:
    """An MD17 .npz trajectory (z (n,), R (T, n, 3), E (T,) or (T, 1), F (T, n, 3)) or the same
    in the revised-MD17 layout (nuclear_charges, coords, energies, forces)."""
    if not Path(path).is_file():
        raise ValueError(f"{path}: no such MD17 .npz file")
    try:
        d = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # numpy's own wording
        raise ValueError(f"{path}: not a readable .npz archive (expected z, R, E, F)") from None
    if not hasattr(d, "files"):
        raise ValueError(f"{path}: a single array, not an .npz archive with z, R, E, F")
    with d:
        keys = MD17_KEYS["rMD17"] if "coords" in d else MD17_KEYS["MD17"]
        missing = [k for k in keys if k not in d]
        if missing:
            raise ValueError(
                f"{path}: missing arrays {missing}; expected z, R, E, F (MD17) or "
                "nuclear_charges, coords, energies, forces (rMD17)"
            )
        z, r, e, f = (d[k] for k in keys)
        z, e = z.astype(int), e.reshape(-1)
    if r.ndim != 3 or r.shape[1:] != (len(z), 3) or f.shape != r.shape or len(e) != len(r):
        raise ValueError(
            f"{path}: z has {len(z)} atoms but R {r.shape}, F {f.shape}, E {e.shape} disagree"
        )
    check_molecule(z, r[0], str(path))
    return [Molecule(z, r[t], {"energy": float(e[t])}, f[t]) for t in range(len(r))]


def read_qm9_folder(path: str | Path) -> list[Molecule]:
    """Every QM9 .xyz file in a folder (sorted by name), read with `read_qm9_xyz`."""
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(f"{path}: not a folder of QM9 .xyz files")
    files = sorted(folder.glob("*.xyz"))
    if not files:
        raise ValueError(f"{path}: holds no .xyz files")
    return [read_qm9_xyz(f) for f in files]


def qm9pack_folder() -> Path:
    """The data folder of the installed `qm9pack` wheel, found without importing the package."""
    try:
        dist = importlib.metadata.distribution("qm9pack")
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(
            "qm9_csv='qm9pack' needs the qm9pack==1.0.3 wheel installed (pip install qm9pack==1.0.3)"
        ) from None
    return Path(str(dist.locate_file("qm9pack/data")))


def _csv_files(path: str | Path) -> list[Path]:
    if str(path) == "qm9pack":
        path = qm9pack_folder()
    p = Path(path)
    if p.is_file():
        return [p]
    if p.is_dir():
        files = sorted(p.glob("qm9_part*.csv")) or sorted(p.glob("*.csv"))
        if files:
            return files
        raise ValueError(f"{path}: folder holds no QM9 .csv files")
    raise ValueError(f"{path}: no such QM9 .csv file or folder")


def _hash_rank(index: str) -> int:
    """A fixed pseudo-random rank per molecule: the subset and split do not depend on any seed."""
    return int.from_bytes(hashlib.blake2b(index.encode(), digest_size=8).digest(), "big")


def _csv_molecule(row: dict[str, str], where: str) -> Molecule:
    try:
        symbols = ast.literal_eval(row["Elements"])
        pos = np.asarray(ast.literal_eval(row["XYZ_Ang"]), dtype=np.float64).reshape(-1, 3)
        z = np.array([SYMBOLS[s] for s in symbols])
        raw = {k: float(row[col]) for k, col in QM9_CSV_COLUMNS.items()}
    except (ValueError, SyntaxError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{where}: unreadable molecule row ({type(exc).__name__}: {exc})"
        ) from None
    check_molecule(z, pos, where)
    y = {"gap": raw["gap"] * HARTREE_EV, "u0": raw["u0"] * HARTREE_EV, "mu": raw["mu"]}
    return Molecule(z, pos, y)


def read_qm9_csv(path: str | Path, n: int | None) -> list[Molecule]:
    """n DFT QM9 molecules (hydrogens included) from CSV tables in the qm9pack layout.

    `path` is one .csv file, a folder of them (qm9pack's `qm9_part*.csv`), or 'qm9pack' for the
    installed wheel's data (n None: every molecule). The n molecules are those with the
    smallest fixed hash of their
    `Index`, in that order, so the subset is a uniform sample of QM9, and the first n of a larger
    n are the same molecules. Labels: gap and u0 in eV (u0 with per-element reference energies
    regressed out over the n molecules, as for the QM9-like set), mu in Debye.
    """
    csv.field_size_limit(1 << 26)
    need = ("Index", "Elements", "XYZ_Ang", *QM9_CSV_COLUMNS.values())
    best: list[tuple[int, str, dict[str, str]]] = []  # max-heap on rank via negation
    for file in _csv_files(path):
        try:
            with open(file, newline="", encoding="utf-8") as fh:
                reader = csv.DictReader(fh)
                missing = [c for c in need if c not in (reader.fieldnames or [])]
                if missing:
                    raise ValueError(f"{file}: not a qm9pack QM9 table, missing columns {missing}")
                for line, row in enumerate(reader, start=2):
                    item = (-_hash_rank(row["Index"] or ""), f"{file}:{line}", row)
                    if n is None or len(best) < n:
                        heapq.heappush(best, item)
                    elif item[0] > best[0][0]:
                        heapq.heapreplace(best, item)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ValueError(f"{file}: not a readable CSV file ({type(exc).__name__})") from None
    if n is not None and len(best) < n or not best:
        raise ValueError(f"{path}: holds {len(best)} molecules, need {n or 1}")
    mols = [_csv_molecule(row, where) for _, where, row in sorted(best, reverse=True)]
    counts = np.array([[np.sum(m.z == e) for e in ELEMENTS] for m in mols], dtype=float)
    energy = np.array([m.y["u0"] for m in mols])
    refs = np.linalg.lstsq(counts, energy, rcond=None)[0]
    for m, c in zip(mols, counts):
        m.y["u0"] = float(m.y["u0"] - c @ refs)
    return mols


def write_qm9_csv(path: str | Path, mols: list[Molecule], start: int = 1) -> None:
    """Write molecules as a qm9pack-layout table (labels gap/u0 in eV, mu in Debye); for tests."""
    inv = {v: k for k, v in SYMBOLS.items()}
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["XYZ_file", "Index", "Elements", "XYZ_Ang", *QM9_CSV_COLUMNS.values()])
        for i, m in enumerate(mols, start=start):
            elements = "[" + ",".join(f"'{inv[int(v)]}'" for v in m.z) + "]"
            xyz = "[" + ",".join("[" + ",".join(f"{c:.10f}" for c in p) + "]" for p in m.pos) + "]"
            labels = [m.y["gap"] / HARTREE_EV, m.y["u0"] / HARTREE_EV, m.y["mu"]]
            writer.writerow([f"dsgdb9nsd_{i:06d}.xyz", i, elements, xyz, *labels])
