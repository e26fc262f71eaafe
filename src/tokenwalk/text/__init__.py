"""Prompts as text: the model's tokenizer from its GGUF header, its chat template rendered in a
sandbox, and counts of a text or a conversation (`tokenwalk tokens`, ``--prompt-file``,
``--chat``). Needs the ``text`` extra (tokenizers, jinja2); imported only when text is given."""
