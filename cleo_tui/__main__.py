from cleo_tui.cli import run

run()
