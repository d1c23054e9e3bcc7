"""The backends a spec may name. Built-in backends are registered by module path, so checking
a spec's ``backend`` imports no backend (and no torch); hscale.train.backends holds the
classes and exports this registry: register your own there with ``BACKENDS.register(name,
cls)``, a subclass of hscale.train.backends.Backend."""

from __future__ import annotations

from hscale.registry import Registry

BACKENDS: Registry[type] = Registry("backend")
BACKENDS.register("local", "hscale.train.backends._local:LocalBackend")
BACKENDS.register("verl", "hscale.train.backends.verl:VerlBackend")
BACKENDS.register("scripted", "hscale.train.backends._scripted:ScriptedBackend")
