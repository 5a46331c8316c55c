from bench.runner import takes_part


class EverySystem:
    name = "Every"


class EndToEndOnly:
    name = "End to end only"
    scenarios = ("e2e",)


def test_a_system_without_its_own_scenarios_takes_part_in_every_one() -> None:
    assert all(takes_part(EverySystem(), scenario) for scenario in ("produce", "consume", "e2e"))  # type: ignore[arg-type]


def test_a_system_naming_its_scenarios_is_left_out_of_the_others() -> None:
    assert takes_part(EndToEndOnly(), "e2e")  # type: ignore[arg-type]
    assert not takes_part(EndToEndOnly(), "produce")  # type: ignore[arg-type]
