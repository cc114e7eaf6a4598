"""A name -> class registry shared by the policy families."""


class Registry(dict):
    """Maps a policy name (as written in the scenario file) to its class."""

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
