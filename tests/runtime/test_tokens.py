"""The token ledger: happens-before from tokens, and the largest value a counter can reach."""

import pytest

from avta.isa.enums import Stage
from avta.runtime.tokens import TokenError, TokenLedger, pop_flag, push_flag, token_queue

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def test_flags():
    assert (push_flag(L, C), pop_flag(L, C)) == ("push_next", "pop_prev")
    assert (push_flag(S, C), pop_flag(S, C)) == ("push_prev", "pop_next")
    assert token_queue(1, 2) == (C, S)
    with pytest.raises(TokenError, match="no token queue from STORE to LOAD"):
        token_queue(S, L)


def test_order_comes_from_matched_tokens():
    led = TokenLedger(8)
    l0 = led.add(L)
    l1 = led.add(L)
    led.push(l1, L, C)              # pushed after both loads complete
    c0 = led.add(C)                 # no pop: unordered with the loads
    c1 = led.add(C, [(L, C)])       # waits for l1, hence l0
    assert led.ordered(l0, c1) and led.ordered(l1, c1)
    assert not led.ordered(l0, c0) and not led.ordered(c0, l0)
    assert led.ordered(c0, c1) and not led.ordered(c1, c0)
    assert led.start(c1) == (2, 1, 0)


def test_kth_pop_waits_for_kth_push():
    led = TokenLedger(8)
    a = led.add(L)
    led.push(a, L, C)
    b = led.add(L)
    led.push(b, L, C)
    first = led.add(C, [(L, C)])
    second = led.add(C, [(L, C)])
    assert led.ordered(a, first) and not led.ordered(b, first)
    assert led.ordered(b, second)
    with pytest.raises(TokenError, match="token #3 but only 2"):
        led.add(C, [(L, C)])


def test_peak_is_exact():
    """Compute pops one token per load; load only waits for compute every third load."""
    led = TokenLedger(8)
    for j in range(9):
        pops = [(C, L)] if j >= 3 else []
        i = led.add(L, pops)
        led.push(i, L, C)
        c = led.add(C, [(L, C)])
        led.push(c, C, L)
    assert led.peak(L, C) == 3           # three loads can be ahead of compute
    assert led.peak(C, L) == 3
    assert led.outstanding(L, C) == 0 and led.outstanding(C, L) == 3


def test_pushes_must_follow_program_order():
    led = TokenLedger(8)
    a = led.add(L)
    b = led.add(L)
    led.push(b, L, C)
    with pytest.raises(TokenError, match="successive"):
        led.push(a, L, C)
    with pytest.raises(TokenError, match="cannot push"):
        led.push(b, C, S)
