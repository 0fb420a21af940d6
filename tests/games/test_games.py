"""The game registries: a name names one game."""

from __future__ import annotations

from kgplan.games import GAMES
from kgplan.games.textworld import TW_GAMES, TextWorld
from kgplan.games.twx import TWX_GAMES, TextWorldExpress


def test_no_name_names_two_games_across_the_registries() -> None:
    """TW_GAMES (TextWorld, `kgplan bench textgames --games`) and TWX_GAMES (TextWorld-Express) share no name
    (`cooking-easy` and `coin` were in both); each game of GAMES (`kgplan explore --game`) is the game of its
    own name in the registry of its engine."""
    assert not set(TW_GAMES) & set(TWX_GAMES)
    engines = {"textworld": (TextWorld, TW_GAMES), "twx": (TextWorldExpress, TWX_GAMES)}
    for game in GAMES:
        environment, names = engines[game.family]
        assert game.environment.func is environment and game.environment.args == (game.name,), game.name
        assert game.name in names
