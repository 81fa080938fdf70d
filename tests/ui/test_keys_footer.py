"""The footer shows the keys that answer now, and rebuilds only when they change."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button, Static
from textual.widgets._footer import FooterKey

from tuiloss.ui.widgets import KeysFooter

from ui_helpers import wait_for


class Keys(App[None]):
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("a", "one", "One"), Binding("b", "two", "Two")]

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.builds = 0

    def compose(self) -> ComposeResult:
        yield Button("first", id="first")
        yield Button("second", id="second")
        yield Static("body")
        footer = KeysFooter()
        original = footer.compose

        def counted():
            self.builds += 1
            return original()

        footer.compose = counted
        yield footer

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return True if self.armed or action == "one" else None

    def action_one(self) -> None:
        pass

    def action_two(self) -> None:
        pass

    def action_three(self) -> None:
        pass


def shown(app) -> list[tuple[str, bool]]:
    return [(key.key, key.has_class("-disabled")) for key in app.query(FooterKey)]


async def test_the_footer_follows_the_keys_and_skips_rebuilds_that_change_nothing():
    app = Keys()
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: shown(app) == [("a", False), ("b", True)], 5, "the first keys")
        builds = app.builds
        # moving the focus asks the footer to rebuild, twice, with the same keys
        for target in ("#second", "#first", "#second"):
            app.query_one(target).focus()
            await pilot.pause()
        await pilot.pause()
        assert shown(app) == [("a", False), ("b", True)]
        assert app.builds == builds
        # a key is enabled: the keys on screen follow, with no rebuild
        app.armed = True
        app.refresh_bindings()
        await wait_for(pilot, lambda: shown(app) == [("a", False), ("b", False)], 5, "the enabled key")
        assert app.builds == builds
        # a key is added: it rebuilds, once
        app.bind("c", "three", description="Three")
        app.refresh_bindings()
        await wait_for(pilot, lambda: [key for key, _ in shown(app)] == ["a", "b", "c"], 5, "the new key")
        assert app.builds == builds + 1
