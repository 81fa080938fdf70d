"""The footer of key bindings, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeysFooter(Footer):
    """Textual's footer, skipping rebuilds that would show the same keys.

    Each change of focus asks the footer to rebuild its keys twice (once as the focus moves,
    once after the next refresh), and at start-up several changes come together (the app's
    focus, the screen's focus, its stack). Each rebuild mounts and styles every key again.
    A rebuild goes ahead only when the keys it would show (their keys, labels, tooltips and
    whether they are enabled) differ from those on screen; when only which are enabled changed
    (the viewer enables its keys once it has booted), the keys on screen are enabled or disabled
    where they stand.
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
        shown, self._shown = self._shown, keys
        if shown is not None and _without_enabled(shown) == _without_enabled(keys) and self._enable(keys):
            return
        await super().recompose()

    def _enable(self, keys: tuple) -> bool:
        """Enable and disable the keys on screen as ``keys`` says; False if one is not there."""
        enabled = {(binding.key, binding.action): on for binding, _, on, _ in keys[-1]}
        shown = list(self.query(FooterKey))
        if any((key.key, key.action) not in enabled for key in shown):
            return False
        for key in shown:
            on = enabled[(key.key, key.action)]
            key._disabled = not on  # what a click on it does (Textual keeps it there)
            key.set_class(not on, "-disabled")
        return True


def _without_enabled(keys: tuple) -> tuple:
    return keys[:-1] + (tuple((binding, display, tooltip) for binding, display, _, tooltip in keys[-1]),)
