from tuiloss.cli import run

run()
