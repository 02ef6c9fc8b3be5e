"""The command-line shell: parse, call the library, render. No logic lives here."""
