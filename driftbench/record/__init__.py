"""The run record: files and their states, the typed summary and round rows, and the metrics they hold."""
