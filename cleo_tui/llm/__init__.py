"""Observer and reflector over Anthropic, OpenAI and OpenAI-compatible providers.

Imports nothing from Textual, and nothing heavy at package import: the SDKs
load with `providers`. Where things are:
  observer   run_observer, propose_observer_notes, store_observer_notes
  reflector  propose_reflection, apply_reflection, run_reflector, superseded_details
  proposals  Proposal, list_proposals, get_proposal, discard_proposal, undo_proposal
  resolve    resolve_provider, describe_provider, PROVIDERS
  providers  CancelToken (cancel from another thread), complete
  results    ObserverResult, ReflectorResult, ProposeOutcome, Problem and its kinds
"""
