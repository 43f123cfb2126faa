"""One module per noun; each has ``register(nouns)`` adding its verbs."""
