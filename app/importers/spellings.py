"""One spelling per GPU and per implementation of a family, whichever importer brings them.

A name that differs from one the index already has (or one met earlier in the same import)
only in case or in Unicode's compatibility forms (``Torch``, full-width ``ｔｏｒｃｈ``,
``nvidia h100 80gb hbm3``) reads as that name on every page, yet would rank in groups of its
own. Such a run is refused, saying the spelling to use. Names in other scripts that merely
look alike (Cyrillic ``с``) would need a confusables table and are not caught.
"""

import unicodedata

from ..models import ComparisonGroup, Run


def folded(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold()


class Spellings:
    """The spellings the index has, read once an import; :meth:`problem` takes each new run's in turn."""

    def __init__(self):
        self.gpus = {folded(gpu): gpu for gpu in ComparisonGroup.gpus()}
        self.implementations = {(kernel, folded(name)): name for kernel, name in
                                Run.select(Run.kernel, Run.implementation).distinct().tuples()}

    def problem(self, fields: dict) -> str | None:
        """Why a run's GPU or implementation (its ``Run`` columns) must be spelled another way, or None, after which
        its spellings are the ones later runs must use."""
        gpu, kernel, implementation = fields["gpu"], fields["kernel"], fields["implementation"]
        known_gpu = self.gpus.get(folded(gpu), gpu)
        known_implementation = self.implementations.get((kernel, folded(implementation)), implementation)
        if known_gpu != gpu:
            return f"the GPU {gpu!r} reads as {known_gpu!r}, as the index (or this import) spells it: spell it so"
        if known_implementation != implementation:
            return (f"the implementation {implementation!r} reads as {known_implementation!r}, as the index (or this "
                    f"import) spells it for {kernel}: spell it so")
        self.gpus[folded(gpu)] = gpu
        self.implementations[kernel, folded(implementation)] = implementation
        return None
