"""Search backends: where multi-repository candidates come from.

`base` defines the interface and the records that cross it, `sparse` the BM25 term weighting both
backends share, `local` answers from this machine's indexes (one per repository), `qdrant` from a
shared Qdrant collection, `publish` sends a local index there, and `federated` fuses and ranks the
candidates of any backend the same way, so local and shared answers read alike.
"""
