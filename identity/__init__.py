"""Who may sign in, and how often they may try: limits on failed sign-ins wherever a password is taken."""
