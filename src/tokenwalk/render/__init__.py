"""Views of result objects: Rich tables for people. JSON is the result object itself, dumped."""
