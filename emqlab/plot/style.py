"""Colours and type sizes shared by every figure: Okabe–Ito (colour-blind safe), readable projected.
Nothing here changes global matplotlib state; figures pass these values explicitly."""

OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
    "grey": "#999999",
}

# roles, so every figure means the same thing by a colour
LEASE = OKABE_ITO["blue"]
RUN = OKABE_ITO["green"]
LAPSE = OKABE_ITO["vermillion"]
RENEW = OKABE_ITO["orange"]
CONTENDER = OKABE_ITO["purple"]
PAUSE = OKABE_ITO["grey"]
OVERLAP = OKABE_ITO["vermillion"]
SWEEP = OKABE_ITO["green"]
PER_JOB = OKABE_ITO["orange"]
WIRE = OKABE_ITO["sky"]  # a message on a slow link

FONT = {"title": 15, "label": 13, "tick": 11, "readout": 13}
DIM_ALPHA = 0.18  # an unlit mode
