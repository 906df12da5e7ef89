"""Interactive explorers: live widgets in a kernel, working sliders on the static site.

``CATALOG`` maps each explorer's name to its class; every class builds with no arguments.
"""

from .base import Explorer, ImpossibleSetting
from .decay import DecayExplorer
from .feature_maps import FeatureMapsExplorer
from .gates import GatesExplorer
from .kernels import KernelsExplorer
from .memory import MemoryExplorer
from .rank import RankExplorer
from .recurrence import RecurrenceExplorer
from .scaling import ScalingExplorer
from .sharpness import SharpnessExplorer
from .state_size import StateSizeExplorer
from .worked_example import WorkedExampleExplorer

CATALOG = {cls.name: cls for cls in (StateSizeExplorer, KernelsExplorer, RankExplorer,
                                     SharpnessExplorer, FeatureMapsExplorer, RecurrenceExplorer,
                                     WorkedExampleExplorer, DecayExplorer, ScalingExplorer,
                                     GatesExplorer, MemoryExplorer)}

__all__ = ["CATALOG", "Explorer", "FeatureMapsExplorer", "GatesExplorer", "ImpossibleSetting", "KernelsExplorer",
           "MemoryExplorer", "RankExplorer", "SharpnessExplorer", "StateSizeExplorer", "DecayExplorer",
           "RecurrenceExplorer", "ScalingExplorer", "WorkedExampleExplorer"]
