"""The traced core equals torch's layers, and its interventions edit exactly what they name."""

import pytest
import torch
from torch import nn

from lightning_modules.recurrent import GRU, LSTM, SITES, Intervention

CASES = [
    (cell, bidirectional, dtype)
    for cell in ("gru", "lstm")
    for bidirectional in (False, True)
    for dtype in (torch.float32, torch.float64)
]
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}


def pair(cell, bidirectional, dtype, input_size=5, hidden_size=7):
    torch.manual_seed(0)
    ours = {"gru": GRU, "lstm": LSTM}[cell](input_size, hidden_size, bidirectional=bidirectional)
    theirs = {"gru": nn.GRU, "lstm": nn.LSTM}[cell](
        input_size, hidden_size, batch_first=True, bidirectional=bidirectional
    )
    theirs.load_state_dict(ours.state_dict())
    return ours.to(dtype), theirs.to(dtype)


def flat(state):
    return torch.cat([s.flatten() for s in state]) if isinstance(state, tuple) else state.flatten()


@pytest.mark.parametrize("cell,bidirectional,dtype", CASES)
@pytest.mark.parametrize("padded", [False, True])
def test_traced_equals_torch_layer_with_gradients(cell, bidirectional, dtype, padded):
    ours, theirs = pair(cell, bidirectional, dtype)
    inputs = torch.randn(4, 6, 5, dtype=dtype)
    lengths = torch.tensor([6, 3, 5, 1]) if padded else None
    ours_in = inputs.clone().requires_grad_()
    theirs_in = inputs.clone().requires_grad_()
    record = {}
    ours_out, ours_final = ours(ours_in, lengths=lengths, record=record)
    if padded:
        packed = nn.utils.rnn.pack_padded_sequence(theirs_in, lengths, True, False)
        theirs_out, theirs_final = theirs(packed)
        theirs_out, _ = nn.utils.rnn.pad_packed_sequence(theirs_out, True, total_length=6)
    else:
        theirs_out, theirs_final = theirs(theirs_in)
    atol = TOLERANCE[dtype]
    torch.testing.assert_close(ours_out, theirs_out, atol=atol, rtol=0)
    torch.testing.assert_close(flat(ours_final), flat(theirs_final), atol=atol, rtol=0)
    weights = torch.randn_like(ours_out)
    ((ours_out * weights).sum() + flat(ours_final).sum()).backward()
    ((theirs_out * weights).sum() + flat(theirs_final).sum()).backward()
    torch.testing.assert_close(ours_in.grad, theirs_in.grad, atol=atol, rtol=0)
    for (name, mine), (_, reference) in zip(
        ours.named_parameters(), theirs.named_parameters(), strict=True
    ):
        torch.testing.assert_close(mine.grad, reference.grad, atol=atol, rtol=0, msg=name)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_state_dicts_load_both_ways(cell):
    ours, theirs = pair(cell, True, torch.float32)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in theirs.state_dict().items()
    }
    fresh = {"gru": GRU, "lstm": LSTM}[cell](5, 7, bidirectional=True)
    fresh.load_state_dict(theirs.state_dict())
    theirs.load_state_dict(fresh.state_dict())
    inputs = torch.randn(2, 3, 5)
    torch.testing.assert_close(fresh(inputs, record={})[0], theirs(inputs)[0], atol=1e-5, rtol=0)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_every_site_fires_with_its_width(cell, bidirectional):
    ours, _ = pair(cell, bidirectional, torch.float32)
    record = {}
    ours(torch.randn(3, 4, 5), record=record)
    width = 7 * (2 if bidirectional else 1)
    assert set(record) == set(SITES[cell])
    for site in SITES[cell]:
        assert record[site].shape == (3, 4, width), site


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_writing_the_values_already_there_is_bit_identical(cell):
    ours, _ = pair(cell, True, torch.float64)
    inputs = torch.randn(3, 5, 5, dtype=torch.float64)
    clean = {}
    outputs, _ = ours(inputs, record=clean)
    edits = [
        Intervention(f"encoder.{site}", operation="replace", value=clean[site])
        for site in SITES[cell]
    ]
    edited = {}
    edited_outputs, _ = ours(inputs, record=edited, edits=edits)
    assert torch.equal(outputs, edited_outputs)
    for site in SITES[cell]:
        assert torch.equal(clean[site], edited[site]), site


@pytest.mark.parametrize(
    "cell,site",
    [("gru", "hidden"), ("gru", "update_gate"), ("gru", "reset_gate"), ("lstm", "hidden"),
     ("lstm", "forget_gate"), ("lstm", "cell")],
)  # fmt: skip
def test_planted_edit_changes_exactly_its_units_and_steps(cell, site):
    ours, _ = pair(cell, False, torch.float64)
    inputs = torch.randn(2, 6, 5, dtype=torch.float64)
    clean, edited = {}, {}
    ours(inputs, record=clean)
    units, step = (1, 4), 2
    ours(inputs, record=edited, edits=[Intervention(f"encoder.{site}", units, (step,), "zero")])
    changed = (clean[site] != edited[site]).any(0)  # [time, units]
    expected = torch.zeros_like(changed)
    expected[step, list(units)] = True
    assert torch.equal(changed[: step + 1], expected[: step + 1])
    assert torch.all(edited[site][:, step, list(units)] == 0)
    assert torch.equal(clean["hidden"][:, :step], edited["hidden"][:, :step])
    assert not torch.equal(clean["hidden"][:, step + 1 :], edited["hidden"][:, step + 1 :])


def test_edit_in_backward_direction_leaves_forward_half_untouched():
    ours, _ = pair("gru", True, torch.float64)
    inputs = torch.randn(2, 5, 5, dtype=torch.float64)
    clean, edited = {}, {}
    ours(inputs, record=clean)
    ours(inputs, record=edited, edits=[Intervention("encoder.hidden", (7 + 2,), (3,), "set", 0.5)])
    assert torch.equal(clean["hidden"][..., :7], edited["hidden"][..., :7])
    assert torch.all(edited["hidden"][:, 3, 9] == 0.5)
    # the backward direction runs from the last step down: steps after 3 are unchanged
    assert torch.equal(clean["hidden"][:, 4:, 7:], edited["hidden"][:, 4:, 7:])
    assert not torch.equal(clean["hidden"][:, :3, 7:], edited["hidden"][:, :3, 7:])


@pytest.mark.parametrize(
    "operation,value,expected",
    [("set", 2.0, lambda x: torch.full_like(x, 2.0)), ("scale", 3.0, lambda x: 3 * x),
     ("add", 1.5, lambda x: x + 1.5), ("zero", 0.0, torch.zeros_like)],
)  # fmt: skip
def test_operations_write_the_stated_values(operation, value, expected):
    ours, _ = pair("lstm", False, torch.float64)
    inputs = torch.randn(2, 4, 5, dtype=torch.float64)
    clean, edited = {}, {}
    ours(inputs, record=clean)
    edit = Intervention("encoder.input_gate", (0, 3), (1,), operation, value)
    ours(inputs, record=edited, edits=[edit])
    torch.testing.assert_close(
        edited["input_gate"][:, 1, [0, 3]], expected(clean["input_gate"][:, 1, [0, 3]])
    )


def test_replace_with_values_from_an_earlier_step():
    ours, _ = pair("gru", False, torch.float64)
    inputs = torch.randn(3, 6, 5, dtype=torch.float64)
    clean, edited = {}, {}
    ours(inputs, record=clean)
    units, steps, earlier = [0, 2, 5], [3, 4], [1, 2]
    value = clean["hidden"][:, earlier][:, :, units]
    edit = Intervention("encoder.hidden", units, steps, "replace", value)
    ours(inputs, record=edited, edits=[edit])
    assert torch.equal(edited["hidden"][:, 3, units], clean["hidden"][:, 1, units])
    # step 4 is computed from the edited step 3, then overwritten with step 2's clean values
    assert torch.equal(edited["hidden"][:, 4, units], clean["hidden"][:, 2, units])


def test_bad_intervention_is_one_clear_error():
    with pytest.raises(ValueError, match="operation"):
        Intervention("encoder.hidden", operation="swap")
    with pytest.raises(ValueError, match="<module>.<site>"):
        Intervention("hidden")
    with pytest.raises(ValueError, match="replace"):
        Intervention("encoder.hidden", operation="replace", value=1.0)
