"""Small shared pieces below engine and router; imports nothing of the project."""
