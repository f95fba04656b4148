"""Generators and real-format loaders: physics checks, determinism, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from empp import data


def test_mmff_forces_are_minus_energy_gradient():
    mol, props = data._rdkit_mol("CCO", seed=0)
    pos = np.asarray(mol.GetConformer().GetPositions()) + 0.05
    _, forces = data.mmff_energy_forces(mol, props, pos)
    h, numeric = 1e-5, np.zeros_like(pos)
    for i in range(pos.shape[0]):
        for k in range(3):
            up, down = pos.copy(), pos.copy()
            up[i, k] += h
            down[i, k] -= h
            e_up = data.mmff_energy_forces(mol, props, up)[0]
            e_down = data.mmff_energy_forces(mol, props, down)[0]
            numeric[i, k] = -(e_up - e_down) / (2 * h)
    np.testing.assert_allclose(forces, numeric, atol=1e-3)


def test_conformer_labels_and_determinism():
    a, _ = data.conformer("CC(=O)O", seed=3)
    b, _ = data.conformer("CC(=O)O", seed=3)
    np.testing.assert_array_equal(a.pos, b.pos)
    assert a.y == b.y and a.y["gap"] > 0 and a.y["mu"] > 0
    assert sorted(a.z.tolist()) == [1, 1, 1, 1, 6, 6, 8, 8]


def test_nci_filter_keeps_only_small_cnof():
    smiles = data.nci_smiles(max_heavy=6)
    assert len(smiles) > 20
    from rdkit import Chem

    for smi in smiles:
        mol = Chem.MolFromSmiles(smi)
        assert mol.GetNumAtoms() <= 6
        assert {a.GetAtomicNum() for a in mol.GetAtoms()} <= set(data.ELEMENTS)


def test_md_trajectory_deterministic_and_consistent():
    a = data.md_like("ethanol", 4, stride=5, seed=1)
    b = data.md_like("ethanol", 4, stride=5, seed=1)
    assert len(a) == 4 and all(np.array_equal(x.pos, y.pos) for x, y in zip(a, b))
    mol, props = data._rdkit_mol("CCO", seed=1)
    e, f = data.mmff_energy_forces(mol, props, a[2].pos)
    assert e == pytest.approx(a[2].y["energy"]) and np.allclose(f, a[2].forces)
    assert not np.array_equal(a[0].pos, a[1].pos)


def test_qm9_xyz_round_trip(tmp_path):
    mol, _ = data.conformer("OCC#N")
    props = {k: float(i) + 0.5 for i, k in enumerate(data.QM9_PROPS)}
    data.write_qm9_xyz(tmp_path / "dsgdb9nsd_000001.xyz", mol, props)
    back = data.read_qm9_xyz(tmp_path / "dsgdb9nsd_000001.xyz")
    np.testing.assert_array_equal(back.z, mol.z)
    np.testing.assert_allclose(back.pos, mol.pos, atol=1e-9)
    assert back.y["gap"] == props["gap"] and back.y["U0"] == props["U0"]


def test_qm9_xyz_mismatched_atom_count_is_an_error(tmp_path):
    mol, _ = data.conformer("CO")
    path = tmp_path / "bad.xyz"
    data.write_qm9_xyz(path, mol, {})
    lines = path.read_text().splitlines()
    path.write_text("\n".join([str(len(mol.z) + 1), *lines[1:]]))
    with pytest.raises(ValueError, match="atom"):
        data.read_qm9_xyz(path)
    path.write_text("\n".join([str(len(mol.z) - 1), *lines[1:]]))
    with pytest.raises(ValueError, match="more atom lines"):
        data.read_qm9_xyz(path)


def test_md17_npz_round_trip_and_bad_shapes(tmp_path):
    frames = data.md_like("ethanol", 3, stride=2)
    r = np.stack([f.pos for f in frames])
    f = np.stack([fr.forces for fr in frames])
    e = np.array([fr.y["energy"] for fr in frames])[:, None]
    np.savez(tmp_path / "md17_ethanol.npz", z=frames[0].z, R=r, E=e, F=f)
    back = data.read_md17_npz(tmp_path / "md17_ethanol.npz")
    assert len(back) == 3 and np.allclose(back[1].forces, f[1])
    assert back[2].y["energy"] == pytest.approx(e[2, 0])
    np.savez(tmp_path / "bad.npz", z=frames[0].z[:-1], R=r, E=e, F=f)
    with pytest.raises(ValueError, match="atoms"):
        data.read_md17_npz(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: data.element_index(np.array([6, 16, 1])), r"\[16\] not supported"),
        (lambda: data.element_index(np.array([6, 0])), r"\[0\] not supported"),
        (lambda: data.check_molecule(np.array([6]), np.zeros((1, 3))), "at least 2 atoms"),
        (lambda: data.check_molecule(np.array([6, 1]), np.zeros((3, 3))), "2 atomic numbers"),
        (lambda: data.conformer("C1CC(("), "does not parse"),
        (lambda: data.md_like("benzene", 2), "MD molecule must be one of"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_element_rows_are_exact():
    np.testing.assert_array_equal(data.element_index(np.array([1, 6, 7, 8, 9])), [0, 1, 2, 3, 4])


def test_garbage_npz_and_xyz_are_one_line_errors(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x80\x04not an archive at all")
    with pytest.raises(ValueError, match="junk.npz: not a readable .npz"):
        data.read_md17_npz(junk)
    with pytest.raises(ValueError, match="missing.npz: no such"):
        data.read_md17_npz(tmp_path / "missing.npz")
    np.save(tmp_path / "single.npy", np.zeros(3))
    with pytest.raises(ValueError, match="single array"):
        data.read_md17_npz(tmp_path / "single.npy")
    with pytest.raises(ValueError, match="junk.npz: cannot read"):
        data.read_qm9_xyz(junk)
    with pytest.raises(ValueError, match="not a folder"):
        data.read_qm9_folder(tmp_path / "nowhere")


def test_qm9_csv_round_trip_units_and_subset(tmp_path):
    """qm9pack layout: Hartree -> eV, hydrogens kept, a fixed hashed subset nested in larger ones."""
    mols = data.qm9_like(6, max_heavy=4, hydrogens=True)
    for i, m in enumerate(mols):
        m.y.update(gap=1.0 + i, u0=-100.0 * (i + 1), mu=0.5 * i)
    path = tmp_path / "part.csv"
    data.write_qm9_csv(path, mols)
    every = data.read_qm9_csv(path, 6)
    by_pos = {m.pos.round(6).tobytes(): m for m in mols}
    for m in every:
        src = by_pos[m.pos.round(6).tobytes()]
        assert np.array_equal(m.z, src.z) and (m.z == 1).any()
        assert m.y["gap"] == pytest.approx(src.y["gap"], rel=1e-9)
        assert m.y["mu"] == pytest.approx(src.y["mu"])
    four = data.read_qm9_csv(tmp_path, 4)  # a folder works too
    assert [m.pos.tobytes() for m in four] == [m.pos.tobytes() for m in every[:4]]
    # u0 has per-element references regressed out: residuals are orthogonal to the counts
    counts = np.array([[np.sum(m.z == e) for e in data.ELEMENTS] for m in every])
    assert np.abs(counts.T @ np.array([m.y["u0"] for m in every])).max() < 1e-6


def test_qm9_csv_errors_are_one_line(tmp_path):
    with pytest.raises(ValueError, match="no such QM9 .csv"):
        data.read_qm9_csv(tmp_path / "missing.csv", 1)
    junk = tmp_path / "junk.csv"
    junk.write_bytes(b"\x00\xff\xfe garbage\n1,2,3\n")
    with pytest.raises(ValueError, match="junk.csv") as err:
        data.read_qm9_csv(junk, 1)
    assert "\n" not in str(err.value)
    mols = data.qm9_like(2, max_heavy=3, hydrogens=True)
    good = tmp_path / "good.csv"
    data.write_qm9_csv(good, mols)
    with pytest.raises(ValueError, match="holds 2 molecules, need 5"):
        data.read_qm9_csv(good, 5)
    broken = tmp_path / "broken.csv"
    broken.write_text(good.read_text().replace("'C'", "'Xx'", 1))
    with pytest.raises(ValueError, match="unreadable molecule row"):
        data.read_qm9_csv(broken, 2)


def test_rmd17_layout_and_folder_lookup(tmp_path):
    """revised MD17 keys read like MD17's; a folder resolves md17_/rmd17_<molecule>.npz."""
    frames = data.md_like("ethanol", 3, stride=2)
    r = np.stack([f.pos for f in frames])
    f = np.stack([fr.forces for fr in frames])
    e = np.array([fr.y["energy"] for fr in frames])
    np.savez(
        tmp_path / "rmd17_ethanol.npz", nuclear_charges=frames[0].z, coords=r, energies=e, forces=f
    )
    path = data.md17_file(tmp_path, "ethanol")
    assert path.name == "rmd17_ethanol.npz"
    back = data.read_md17_npz(path)
    assert len(back) == 3 and np.allclose(back[2].forces, f[2]) and np.allclose(back[0].pos, r[0])
    assert back[1].y["energy"] == pytest.approx(e[1])
    with pytest.raises(ValueError, match="aspirin"):
        data.md17_file(tmp_path, "aspirin")
    np.savez(tmp_path / "half.npz", coords=r, energies=e)
    with pytest.raises(ValueError, match="nuclear_charges"):
        data.read_md17_npz(tmp_path / "half.npz")
