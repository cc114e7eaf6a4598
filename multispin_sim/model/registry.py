"""A name -> class registry shared by the policy families and the model's components
(acceptance models, beliefs): a setting as written in the scenario file -> its class."""


class Registry(dict):
    """Maps a name (as written in the scenario file) to its class; ``make`` builds one."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def register(self, name):
        def deco(cls):
            cls.name = name
            self[name] = cls
            return cls
        return deco

    def make(self, name, *args, **kwargs):
        try:
            cls = self[name]
        except KeyError:
            allowed = ", ".join(sorted(self))
            raise ValueError(f"unknown {self.kind} {name!r}; allowed: {allowed}") from None
        return cls(*args, **kwargs)
