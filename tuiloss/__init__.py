"""tuiloss: training loss curves of every run, live in the terminal."""

__version__ = "0.1.0"
