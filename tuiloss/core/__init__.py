"""The headless core: discovery, parsing, tailing, storage, analysis and reporting.

Nothing under this package imports textual, plotext or watchdog; a test proves it.
"""
