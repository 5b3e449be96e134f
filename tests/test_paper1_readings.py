"""Paper 1's two readings of the update gate, and paper 2's statistics over seeds: known
answers."""

import pytest
import torch

from experiments.paper1.analyses import paper_equation
from experiments.paper2.readings import Estimate, over_seeds
from probes.activations import gate_saturation
from probes.traces import site_values
from probes.weights import gate_weights, polarity_correlation


def test_the_paper_equations_reading_equals_computing_with_its_gate():
    """`paper_equation` turns torch-z statistics into those of the paper's 1 - z and -W_z: the
    same numbers as computing them from the mirrored gate and weights directly."""
    generator = torch.Generator().manual_seed(0)
    gate = torch.sigmoid(3 * torch.randn(4, 6, 10, generator=generator))
    mask = torch.ones(4, 6, dtype=torch.bool)
    trace = {"decoder.update_gate": gate, "decoder.reset_gate": gate.flip(-1)}
    state = {"encoder.weight_hh_l0": torch.randn(30, 10, generator=generator)}
    torch_z = {
        "saturation": {site: vars(gate_saturation(site_values(trace, site), mask))
                       for site in trace},
        "polarity_correlation": {"encoder": polarity_correlation(
            gate_weights(state, "encoder", "update_gate", "hh"),
            gate_weights(state, "encoder", "reset_gate", "hh"), dim=1)},
    }  # fmt: skip
    mirrored = paper_equation(torch_z)
    for site in trace:
        direct = gate_saturation(site_values(trace, site, "paper1"), mask)
        assert torch.equal(mirrored["saturation"][site]["left"], direct.left), site
        assert torch.equal(mirrored["saturation"][site]["right"], direct.right), site
    direct_r = polarity_correlation(
        gate_weights(state, "encoder", "update_gate", "hh", convention="paper1"),
        gate_weights(state, "encoder", "reset_gate", "hh", convention="paper1"), dim=1,
    )  # fmt: skip
    assert mirrored["polarity_correlation"]["encoder"] == pytest.approx(direct_r, abs=1e-12)
    assert torch_z["saturation"]["decoder.update_gate"]["left"].sum() > 0  # not a vacuous swap


def test_estimates_over_seeds_are_the_mean_and_standard_error_of_the_seeds_means():
    seeds = [Estimate(0.2, 0.01), Estimate(0.4, 0.02), Estimate(0.9, 0.05)]
    combined = over_seeds(seeds)
    assert combined.mean == pytest.approx(0.5)
    assert combined.standard_error == pytest.approx(
        torch.tensor([0.2, 0.4, 0.9]).std().item() / 3**0.5
    )
    assert over_seeds(seeds[:1]) == seeds[0]  # one seed: its own spread over the probe rules
