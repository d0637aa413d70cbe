"""Factor spaces, pydoe designs, D-optimal subsets and seeding order (seed 000 §5.4-5.5, 002 §3.7)."""
import math

import numpy as np
import pytest

from workbench.measure.factor_model import surface_grid
from workbench.planning.design import Categorical, FactorSpace, Numeric
from workbench.planning.doptimal import d_optimal, log_det_information
from workbench.planning.seeding import nearest_seed, seed_order

DISKS = Numeric("disks", levels=(1, 2, 3, 4), integer=True)
THREADS = Numeric("threads", levels=(1, 2, 4, 8, 16, 32, 64, 100), scale="log", integer=True)
SPACE = FactorSpace([DISKS, THREADS])


def test_coding_roundtrip_and_ranges():
    assert DISKS.code(1) == -1 and DISKS.code(4) == 1 and DISKS.code(2.5) == pytest.approx(0.0)
    assert THREADS.code(10) == pytest.approx(0.0)  # log scale: geometric midpoint of 1..100
    g = SPACE.grid()
    assert SPACE.decode(SPACE.encode(g)) == g
    C = SPACE.coded(g)
    assert C.min() == pytest.approx(-1) and C.max() == pytest.approx(1)
    cont = Numeric("memory_mb", low=256, high=4096, scale="log")
    assert float(cont.decode(cont.code(1000.0))) == pytest.approx(1000.0)
    with pytest.raises(ValueError):
        Numeric("x", low=2, high=1)
    with pytest.raises(ValueError):
        Numeric("x", low=0, high=1, scale="log")
    with pytest.raises(ValueError):
        Categorical("fs", ("ext4", "ext4"))


def test_fullfact_ff2n_sizes_and_levels():
    two = FactorSpace([Numeric("a", levels=(0, 1)), Numeric("b", levels=(10, 20))])
    ff = two.fullfact()
    assert len(ff) == 4
    assert {(s["a"], s["b"]) for s in ff} == {(0, 10), (0, 20), (1, 10), (1, 20)}
    assert len(SPACE.grid()) == 32
    assert {s["threads"] for s in SPACE.grid()} == {1, 2, 4, 8, 16, 32, 64, 100}
    f2 = SPACE.ff2n()
    assert len(f2) == 4 and {(s["disks"], s["threads"]) for s in f2} == {(1, 1), (1, 100), (4, 1), (4, 100)}
    three = FactorSpace([Numeric("a", low=0, high=1), Numeric("b", low=0, high=1), Numeric("c", low=0, high=1)])
    assert len(three.ff2n()) == 8
    with_cat = FactorSpace([DISKS, Categorical("fs", ("ext4", "xfs", "btrfs"))])
    assert len(with_cat.ff2n()) == 2 * 3
    assert len(with_cat.fullfact()) == 4 * 3


def test_ccd_bbd_lhs_bounds():
    three = FactorSpace([Numeric("a", low=0, high=10), Numeric("b", low=1, high=100, scale="log"),
                         Numeric("c", low=-5, high=5)])
    ccd = three.ccdesign(center=(1, 1))  # face-centred: 8 corners + 6 axial + 2 centre
    assert len(ccd) == 16
    for s in ccd:
        assert 0 <= s["a"] <= 10 and 1 - 1e-9 <= s["b"] <= 100 + 1e-9 and -5 <= s["c"] <= 5
    bbd = three.bbdesign(center=1)
    assert len(bbd) == 13
    lh = three.lhs(20, seed=3)
    assert len(lh) == 20
    a = np.array([s["a"] for s in lh])
    assert a.min() >= 0 and a.max() <= 10
    # Latin property: one sample per 1/20 stratum of each factor
    assert sorted(np.floor(a / 10 * 20).astype(int).tolist()) == list(range(20))
    assert three.lhs(20, seed=3) == lh  # deterministic by seed
    with pytest.raises(ValueError):
        SPACE.bbdesign()


def test_d_optimal_subset_from_candidates_beats_random():
    g = SPACE.grid()
    M, _ = SPACE.model_matrix(g)
    rng = np.random.default_rng(0)
    for n in (6, 8, 10):
        r = d_optimal(SPACE, n, g)
        assert len(r.indices) == n == len(set(r.indices))
        assert all(s in g for s in r.samples)
        assert r.samples == [g[i] for i in r.indices]
        assert r.log_det == pytest.approx(log_det_information(M[r.indices]))
        rand = [log_det_information(M[rng.choice(len(g), n, replace=False)]) for _ in range(300)]
        assert r.log_det >= max(rand) - 1e-9
        assert r.log_det > np.median([x for x in rand if math.isfinite(x)]) + 1.0
    # corners of a quadratic design are always chosen
    r = d_optimal(SPACE, 6, g)
    corners = {(1, 1), (1, 100), (4, 1), (4, 100)}
    assert len(corners & {(s["disks"], s["threads"]) for s in r.samples}) >= 3


def test_d_optimal_with_categorical_dummies():
    sp = FactorSpace([DISKS, Categorical("fs", ("ext4", "xfs", "btrfs"))])
    cand = sp.grid()
    r = d_optimal(sp, 9, cand)  # p = 1 + 1 + 2 + 1 + 2 = 7 parameters
    assert r.n_params == 7 and len(set(r.indices)) == 9
    assert math.isfinite(r.log_det)
    assert {s["fs"] for s in r.samples} == {"ext4", "xfs", "btrfs"}
    with pytest.raises(ValueError):
        d_optimal(sp, 13, cand)


def test_seed_order_is_a_permutation_walking_neighbours():
    g = surface_grid()
    order = seed_order(g)
    assert sorted(order) == list(range(32))
    assert g[order[0]] == {"disks": 1, "threads": 1}
    sp = FactorSpace.infer(g)
    steps = [np.linalg.norm(sp.coded([g[a]]) - sp.coded([g[b]])) for a, b in zip(order, order[1:])]
    assert max(steps) <= 2 / 3 + 1e-9  # never jumps further than one disk step
    # categorical levels are finished before the chain moves on
    g2 = [{**s, "fs": fs} for fs in ("ext4", "xfs") for s in g[:8]]
    o2 = seed_order(g2)
    fs_seq = [g2[i]["fs"] for i in o2]
    assert fs_seq.count("ext4") == 8 and len({tuple(fs_seq[:8])}) == 1


def test_nearest_seed_and_categorical_fallback():
    fin = [({"disks": 1, "threads": 8}, 100.0), ({"disks": 4, "threads": 100}, 400.0),
           ({"disks": 2, "threads": 16}, 200.0)]
    # coded distances: to (2, 16) one threads step (log scale) < to (1, 8) one disks step
    assert nearest_seed({"disks": 2, "threads": 8}, fin) == 200.0
    assert nearest_seed({"disks": 2, "threads": 8}, fin, space=SPACE) == 200.0
    assert nearest_seed({"disks": 4, "threads": 64}, fin) == 400.0
    assert nearest_seed({"disks": 1, "threads": 8}, []) is None
    assert nearest_seed({"disks": 1, "threads": 8}, [], default=50.0) == 50.0
    fin_fs = [({"disks": 1, "fs": "ext4"}, 100.0), ({"disks": 4, "fs": "ext4"}, 400.0),
              ({"disks": 2, "fs": "ext4"}, 250.0)]
    # no finished sample with fs=xfs: default seed (000) or aggregate (002)
    assert nearest_seed({"disks": 2, "fs": "xfs"}, fin_fs, default=50.0) == 50.0
    assert nearest_seed({"disks": 2, "fs": "xfs"}, fin_fs, default=50.0, fallback="aggregate") == 250.0
    assert nearest_seed({"disks": 4, "fs": "ext4"}, fin_fs, default=50.0) == 400.0
