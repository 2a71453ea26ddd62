"""How citesum is run: the command line, schedules, triggers and serving."""
