"""edgeprof.Result as Python sees it, without running a workload."""

import edgeprof


def test_every_result_member_has_a_docstring():
    # pybind11 makes each def_readonly / def_property_readonly a property of the class, whose
    # __doc__ is the docstring given in python/src/bind_*.cpp ("" when none was). Methods are not checked.
    members = {name: attr for name, attr in vars(edgeprof.Result).items()
               if not name.startswith("_") and isinstance(attr, property)}
    assert {"wall_time_s", "ok", "cgroup_mode"} <= set(members)  # the properties are found at all
    undocumented = sorted(name for name, prop in members.items()
                          if not (prop.__doc__ or "").strip())
    assert undocumented == []
