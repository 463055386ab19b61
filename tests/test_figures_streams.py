"""Notebooks 05 and 05b: the |λ₂| of mixer products (checked against float64 numpy and
80-digit mpmath products) and the Sinkhorn animation (frames, Play, errors falling)."""

import itertools

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from geolab import explore, figures
from geolab.explore.sinkhorn import FLOAT64_EPS, preset_matrix_logits, sinkhorn_rounds
from geolab.explore.streams import family_mixers, power_of_ten, preset_logits
from geolab.metrics import compound2, second_eigenvalue_curve


def numpy_moduli(P: np.ndarray) -> np.ndarray:
    """|eigenvalues| of P, largest first: the independent float64 reference."""
    return np.sort(np.abs(np.linalg.eigvals(P)))[::-1]


def test_compound2_multiplies_and_its_eigenvalues_are_pair_products():
    gen = torch.Generator().manual_seed(3)
    A, B = torch.randn(2, 4, 4, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(compound2(A @ B), compound2(A) @ compound2(B))
    lam = np.linalg.eigvals(A.numpy())
    pairs = sorted(abs(lam[i] * lam[j]) for i, j in itertools.combinations(range(4), 2))
    got = sorted(np.abs(np.linalg.eigvals(compound2(A).numpy())))
    np.testing.assert_allclose(got, pairs, rtol=1e-10)


@pytest.mark.parametrize("family", explore.SPECTRUM_FAMILIES)
@pytest.mark.parametrize("preset", list(explore.PRESETS))
def test_lambda2_of_the_product_matches_numpy_float64(preset, family):
    """Ten layers: the explicit float64 product still holds |λ₂| to many digits."""
    mats = family_mixers(family, preset_logits(preset, 10, same=False)).numpy()
    one, two = second_eigenvalue_curve(torch.from_numpy(mats))
    P = np.eye(4)
    for depth, H in enumerate(mats):
        P = H @ P
        ref = numpy_moduli(P)
        assert one[depth].item() == pytest.approx(np.log10(ref[0]), abs=1e-9)
        assert two[depth].item() == pytest.approx(np.log10(ref[1]), abs=1e-6)


@pytest.mark.parametrize("family", ["HC", "mHC"])
def test_lambda2_stays_exact_where_the_float64_product_has_lost_it(family):
    """60 random mHC mixers: |λ₂| ≈ 1e−30, far below the explicit float64 product's rounding
    (its eigvals return ~1e−17); an 80-digit mpmath product agrees with the compound route."""
    mpmath = pytest.importorskip("mpmath")
    mats = family_mixers(family, preset_logits("random", 60, same=False))
    _, two = second_eigenvalue_curve(mats)
    mpmath.mp.dps = 80
    P = mpmath.eye(4)
    for H in mats:
        P = mpmath.matrix(H.tolist()) * P
    moduli = sorted((abs(z) for z in mpmath.eig(P)[0]), reverse=True)
    assert two[-1].item() == pytest.approx(float(mpmath.log10(moduli[1])), abs=1e-9)
    if family == "mHC":
        assert two[-1].item() < -20
        assert np.log10(numpy_moduli(np.linalg.multi_dot(mats.numpy()[::-1]))[1]) > -20


@pytest.mark.parametrize("family", explore.SPECTRUM_FAMILIES)
def test_overlay_is_lambda2_to_the_L_and_matches_the_repeated_product(family):
    view = explore.spectrum_view("random", 40, same=True)
    H = family_mixers(family, preset_logits("random", 1, same=True))[0].numpy()
    per_layer = np.log10(numpy_moduli(H)[1])
    overlay = view.numbers["overlay"][family]
    np.testing.assert_allclose(overlay, per_layer * np.arange(1, 41), rtol=1e-12, atol=1e-12)
    # one mixer repeated: the product's |λ₂| is |λ₂|^L (eigenvalues of H^L are λ^L)
    np.testing.assert_allclose(view.numbers["lambda2"][family], overlay, rtol=1e-9, atol=1e-9)
    for L in (1, 4, 8):
        ref = np.log10(numpy_moduli(np.linalg.matrix_power(H, L))[1])
        assert overlay[L - 1] == pytest.approx(ref, abs=1e-8)
    fig = view.figures["spectrum"]
    exact, dotted = (t for t in fig.data if t.name in (family, f"{family} |λ₂|^L"))
    assert list(dotted.y) == pytest.approx(list(overlay)) and dotted.line.dash == "dot"
    assert list(exact.y) == pytest.approx(list(view.numbers["lambda2"][family]))


def test_fresh_mixers_collapse_mhc_keep_jpmhc_and_grow_hc():
    final = explore.spectrum_view("random", 50).numbers["final"]
    assert final["mHC"][0] == pytest.approx(0.0, abs=1e-5)  # λ₁ = 1: the streams' mean
    assert final["mHC"][1] < -10 and final["mHC-lite"][1] < -10
    assert abs(final["JPmHC"][1]) < 0.3  # |λ₂| within a factor 2 of 1
    assert final["HC"][0] > 5


def test_spectrum_figure_has_one_titled_panel_per_family_and_no_end_labels():
    fig = explore.spectrum_view("identity-ish", 30).figures["spectrum"]
    go.Figure(fig.to_dict())  # validates
    titles = [a.text for a in fig.layout.annotations]
    assert titles == list(explore.SPECTRUM_FAMILIES)
    spots = {(round(a.x, 3), round(a.y, 3)) for a in fig.layout.annotations}
    assert len(spots) == 4  # one title per panel, each above its own panel
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert legend == ["|λ₂| of the product", "|λ₂|^L"]
    one = explore.spectrum_view("identity-ish", 30).figures["mHC"]
    assert [a.text for a in one.layout.annotations] == ["mHC"]


def test_power_of_ten_prints_values_beyond_float64():
    assert power_of_ten(-520.3) == "≈ 5.0e−521"
    assert power_of_ten(0.0) == "1"
    assert power_of_ten(400.0) == "≈ 1.0e400"
    assert power_of_ten(float("-inf")) == "0"


@pytest.mark.parametrize("preset", list(explore.SINKHORN_PRESETS))
def test_sinkhorn_animation_has_a_frame_per_round_and_a_play_button(preset):
    fig = explore.sinkhorn_view(preset).figures["animation"]
    go.Figure(fig.to_dict())  # validates, frames included
    assert [f.name for f in fig.frames] == [str(k) for k in range(31)]
    (menu,) = fig.layout.updatemenus
    play = next(b for b in menu.buttons if "Play" in b.label)
    assert play.method == "animate" and play.args[0] is None
    (slider,) = fig.layout.sliders
    assert [list(s.args[0]) for s in slider.steps] == [[str(k)] for k in range(31)]
    shown = torch.tensor(np.array(fig.frames[5].data[0].z))
    torch.testing.assert_close(shown, sinkhorn_rounds(preset_matrix_logits(preset), 5)[5])


@pytest.mark.parametrize("preset", list(explore.SINKHORN_PRESETS))
def test_sinkhorn_error_falls_round_after_round(preset):
    """The distance to the doubly stochastic matrices (the worse of row and column sums) never
    grows from one round to the next, to float64 rounding, and round 30 beats round 1."""
    n = explore.sinkhorn_view(preset).numbers
    worst = np.maximum(n["row_errors"], n["col_errors"])
    assert np.all(np.diff(worst) <= 4 * FLOAT64_EPS)
    assert worst[-1] < worst[1] or worst[1] <= 4 * FLOAT64_EPS


def test_sinkhorn_presets_span_fast_exact_and_slow():
    first = {p: explore.sinkhorn_view(p).numbers["first_within"] for p in explore.SINKHORN_PRESETS}
    assert first["JPmHC rotation"] == 1  # Q∘Q is already doubly stochastic: one round scales it
    assert first["identity-ish"] is not None and first["identity-ish"] > 5
    assert first["random"] is None and first["near-permutation"] is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: explore.spectrum_view("nope", 10), "preset='nope' is not allowed"),
        (lambda: explore.spectrum_view("random", 0), "depth=0 is not allowed"),
        (lambda: explore.spectrum_view("random", 10, same=1), "same=1 is not allowed"),
        (lambda: explore.sinkhorn_view("nope"), "preset='nope' is not allowed"),
        (lambda: explore.sinkhorn_view("random", 31), "rounds=31 is not allowed"),
        (lambda: figures.second_eigenvalue_figure([1], {}), "panels"),
        (lambda: figures.sinkhorn_animation_figure([], [], []), "iterates"),
    ],
)
def test_bad_input_names_the_field(call, message):
    with pytest.raises(ValueError, match=message):
        call()
