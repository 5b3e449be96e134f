"""`python -m probes view --runs GLOB`: a local web page over recorded run folders (Dash).

- `runs.py` reads what the page shows from a run folder, lazily: a trace's header first, its small
  entries (tokens, predictions) for the list of examples, and one example's row of one site at a
  time (memory-mapped slices through safetensors' `safe_open`). It knows nothing of the page.
- `page.py` is the page: its layout and callbacks (Dash, Plotly heat maps).
- `pattern_search.py` finds the spans of a split where chosen units are on (LSTMVis's search);
  `side_by_side.py` shows an example in a second run or epoch beside the first: views that
  `page.py` places on the page (`page.VIEWS`).
- `decomposition.py` reaches a run's model and decomposes an example's logits by contextual
  decomposition, each input token alone the phrase; `decomposition_page.py` is its section of the
  page (the tokens coloured by relevance).
- `command.py` is the command line: the options, the address printed, the server bound to
  127.0.0.1.
"""
