# Type hints of the native half of the package (crates/py/src/lib.rs); use the functions
# of `rtvmm` itself, which turn these tuples into results and tables.
from typing import List, Mapping, Optional, Sequence, Tuple, Any

DEFAULT_SEED: int

class RtvmmError(Exception): ...
class InputError(RtvmmError): ...
class RunError(RtvmmError): ...

def simulate(
    kind: str,
    value: str,
    policy: Optional[str] = None,
    duration: Optional[str] = None,
    seed: Optional[int] = None,
    jobs: bool = True,
) -> Tuple[str, str, Optional[str]]: ...
def analyze(
    kind: str,
    value: str,
    quantum: Optional[str] = None,
    sbf: str = "auto",
    guest: Optional[str] = None,
    period_range: Optional[str] = None,
    fixed_periods: Sequence[str] = (),
    policy: Optional[str] = None,
    given: bool = False,
    model: Optional[str] = None,
) -> Tuple[str, str, str, Optional[str], Optional[str], str]: ...
def generate(name: str, options: Mapping[str, Any]) -> str: ...
def experiment(
    name: str,
    out: str,
    quick: bool = False,
    seed: Optional[int] = None,
    duration: Optional[str] = None,
    policies: Optional[str] = None,
    overhead: Optional[str] = None,
    in_phase: bool = False,
    workloads: Sequence[str] = (),
    jobs: int = 0,
    seeds: Optional[int] = None,
) -> Tuple[str, List[str], bool]: ...
def experiments_list() -> str: ...
def policies() -> List[Tuple[str, List[str], str]]: ...
