# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the part of Spack's package API (`spack.package`) that the dlx recipe uses.

Spack itself cannot be installed on the build machines, so recipe_test.py loads
packaging/spack/packages/dlx/package.py against this module. It records the directives the way
Spack does (per class, at class creation) and gives CMakePackage the `define` that Spack's CMake
build system has: booleans become `-DNAME:BOOL=ON|OFF`, everything else `-DNAME:STRING=value`
(sequences joined with `;`).
"""
import collections.abc
import types

_pending = []  # directives met while a class body runs, claimed by the class when it is created


class Directive(collections.namedtuple("Directive", "kind args kwargs")):
    pass


def _directive(kind):
    def record(*args, **kwargs):
        _pending.append(Directive(kind, args, kwargs))
    record.__name__ = kind
    return record


version = _directive("version")
variant = _directive("variant")
depends_on = _directive("depends_on")
extends = _directive("extends")
conflicts = _directive("conflicts")
license = _directive("license")
maintainers = _directive("maintainers")
requires = _directive("requires")
resource = _directive("resource")


def define(name, value):
    if isinstance(value, bool):
        return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
    if isinstance(value, collections.abc.Sequence) and not isinstance(value, str):
        value = ";".join(str(item) for item in value)
    return f"-D{name}:STRING={value}"


class CMakePackage:
    directives = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.directives = list(_pending)
        _pending.clear()

    def __init__(self, spec):
        self.spec = spec

    def define(self, name, value):
        return define(name, value)

    def define_from_variant(self, name, variant_name):
        return define(name, self.spec.variants[variant_name].value)


class Spec:
    """A concrete spec of the stand-in: `+name`/`~name` variants and named dependencies."""

    def __init__(self, variants, dependencies):
        self.variants = {name: types.SimpleNamespace(value=value) for name, value in variants.items()}
        self._dependencies = dependencies

    def satisfies(self, constraint):
        if constraint[0] in "+~" and constraint[1:] in self.variants:
            return self.variants[constraint[1:]].value is (constraint[0] == "+")
        raise ValueError(f"the stand-in Spec cannot judge {constraint!r}")

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, name):
        return self._dependencies[name]


__all__ = ["CMakePackage", "version", "variant", "depends_on", "extends", "conflicts", "license",
           "maintainers", "requires", "resource", "define"]
