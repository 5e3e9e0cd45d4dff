"""Testing ACP clients and agents against recordings: cassettes and the pytest plugin."""
