from tokenwalk.cli.app import run

run()
