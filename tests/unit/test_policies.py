"""1 replica by weighted share: deterministic, and each SRC receives its share."""

import random

import pytest

from replicas.policies import PolicyError, choose_by_weighted_share, normalised_shares

WEIGHTS = {"UKSRC": 2.0, "AUSRC": 2.0, "ZASRC": 2.0, "CNSRC": 1.5, "FRSRC": 1.0, "ESSRC": 1.0, "JPSRC": 0.5}


def place_all(sizes, weights=WEIGHTS):
    placed: dict[str, int] = {}
    order = []
    for size in sizes:
        destination = choose_by_weighted_share(weights, placed, size)
        placed[destination] = placed.get(destination, 0) + size
        order.append(destination)
    return placed, order


def test_each_src_receives_its_share_within_one_percent_over_many_products():
    rng = random.Random(7)
    sizes = [rng.randint(1, 100) * 10**9 for _ in range(5000)]
    placed, _ = place_all(sizes)
    total = sum(sizes)
    shares = normalised_shares(WEIGHTS)
    for name, share in shares.items():
        assert placed[name] / total == pytest.approx(share, abs=0.01), name


def test_every_prefix_stays_within_one_product_of_the_exact_share():
    rng = random.Random(11)
    sizes = [rng.randint(1, 50) for _ in range(2000)]
    placed: dict[str, int] = {}
    shares = normalised_shares(WEIGHTS)
    total = 0
    for size in sizes:
        destination = choose_by_weighted_share(WEIGHTS, placed, size)
        placed[destination] = placed.get(destination, 0) + size
        total += size
        for name, share in shares.items():
            assert abs(placed.get(name, 0) - share * total) <= max(sizes) * len(shares)


def test_placement_is_deterministic():
    sizes = [random.Random(3).randint(1, 10**6) for _ in range(500)]
    assert place_all(sizes)[1] == place_all(sizes)[1]


def test_zero_weight_destinations_receive_nothing():
    placed, _ = place_all([10] * 100, {"A": 1.0, "B": 0.0})
    assert placed == {"A": 1000}


@pytest.mark.parametrize("weights", [{}, {"A": 0.0}, {"A": -1.0}, {"A": float("nan")}])
def test_bad_weights_are_rejected(weights):
    with pytest.raises(PolicyError):
        choose_by_weighted_share(weights, {}, 10)


def test_negative_sizes_are_rejected():
    with pytest.raises(PolicyError, match="negative"):
        choose_by_weighted_share({"A": 1.0}, {}, -5)
