"""The footer of key bindings, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.widgets import Footer


class KeysFooter(Footer):
    """Textual's footer, skipping rebuilds that would show the same keys.

    Each change of focus asks the footer to rebuild its keys twice (once as the focus moves,
    once after the next refresh), and at start-up several changes come together (the app's
    focus, the screen's focus, its stack). Each rebuild mounts and styles every key again.
    A rebuild goes ahead only when the keys it would show (their keys, labels, tooltips and
    whether they are enabled) differ from those on screen.
    """

    _shown: tuple | None = None

    def _keys(self) -> tuple:
        app = self.app
        return (
            self.show_command_palette,
            self.combine_groups,
            app.ENABLE_COMMAND_PALETTE,
            tuple(
                (binding, app.get_key_display(binding), enabled, tooltip)
                for _, binding, enabled, tooltip in self.screen.active_bindings.values()
            ),
        )

    async def recompose(self) -> None:
        if not self.is_attached:
            return
        keys = self._keys()
        if keys == self._shown:
            return
        self._shown = keys
        await super().recompose()
