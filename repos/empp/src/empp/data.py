"""Molecules without downloads: rdkit's NCI SMILES -> ETKDG + MMFF94 conformers with QM9-like
labels, MMFF94 Langevin trajectories with MD17-like energies and forces, and loaders for the
real QM9 (.xyz) and MD17 (.npz) formats.

Every generator is a deterministic function of its arguments. Units: Angstrom, kcal/mol, Debye.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
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
    lines = Path(path).read_text().replace("*^", "e").splitlines()
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


def read_md17_npz(path: str | Path) -> list[Molecule]:
    """An MD17 .npz trajectory: z (n,), R (T, n, 3), E (T,) or (T, 1), F (T, n, 3)."""
    with np.load(path) as d:
        missing = [k for k in ("z", "R", "E", "F") if k not in d]
        if missing:
            raise ValueError(f"{path}: missing arrays {missing}; expected z, R, E, F")
        z, r, e, f = d["z"].astype(int), d["R"], d["E"].reshape(-1), d["F"]
    if r.ndim != 3 or r.shape[1:] != (len(z), 3) or f.shape != r.shape or len(e) != len(r):
        raise ValueError(
            f"{path}: z has {len(z)} atoms but R {r.shape}, F {f.shape}, E {e.shape} disagree"
        )
    check_molecule(z, r[0], str(path))
    return [Molecule(z, r[t], {"energy": float(e[t])}, f[t]) for t in range(len(r))]
