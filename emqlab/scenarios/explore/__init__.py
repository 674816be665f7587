"""Every interleaving, checked on the real scripts: a breadth-first search over every order of a small
world's steps, each step the real Lua script call on fakeredis on the virtual clock, looking for the
shortest schedule that breaks one of the queue's invariants (or from whose end no fair schedule settles
every job); and the replay of that schedule on a live server.

One idea a module: `world` (who acts, what each step does, where the clock stops), `canonical` (when two
states are one), `search` (the breadth-first search, its reductions, progress, and `explore`), `replay`
(a schedule played again, on fakeredis or a live server), `verdicts` (what each found) and `in_words`
(the words).
"""

from .canonical import canonical_form, exact_form, state_key
from .replay import replay, replay_scale
from .in_words import figure_words, growth_words, label, replay_words, space_words, step_words, steps_text, words
from .search import DEFAULT_STATES, Space, check_names, state_space, explore, explore_params, growth, independent, search
from .verdicts import ExploreVerdict, ReplayVerdict
from .world import BEAT, CHECKS, PROGRESS, PROGRESS_RULE, REAL_MARGIN_S, REAPER, Hand, Params, Seen, Step, World

__all__ = ["BEAT", "CHECKS", "DEFAULT_STATES", "ExploreVerdict", "Hand", "PROGRESS", "PROGRESS_RULE", "Params",
           "REAL_MARGIN_S", "REAPER", "ReplayVerdict", "Seen", "Step", "World", "canonical_form", "check_names",
           "exact_form", "explore", "explore_params", "figure_words", "growth", "growth_words", "independent",
           "label", "replay", "replay_scale", "replay_words", "search", "space_words", "Space", "state_key", "state_space", "step_words", "steps_text",
           "words"]
