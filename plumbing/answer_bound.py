"""The longest model answer the workbench keeps, in characters: one number two layers share.

The router cuts a provider's answer there (its ``max_answer_chars`` may be set lower per
provider, never higher) and the engine's live view of a streaming call holds no more, so a
provider that streams for ever costs the router and the display the same bounded memory.

4 Mi characters is about eight times the longest answers real models give today (128k output
tokens at ~4 characters a token is ~0.5 Mi characters); a str that long is 4-16 MB.
"""

MAX_ANSWER_CHARS = 4 * 1024 * 1024
