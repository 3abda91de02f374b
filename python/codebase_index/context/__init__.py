"""Evidence per token: token-budgeted context packs, pre-edit context and the savings they bring.

`route` picks what a question needs first, `assemble` gathers it through the engine, `pack` fits it into
a hard token budget counted by `tokens`; `savings` records what each answer saved over reading files.
"""
