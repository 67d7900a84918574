"""How a run's events read and look (DESIGN §1): event lines, status tones, breaker stories and
the console printer. Below the Textual app, above launch; imports no Textual."""
