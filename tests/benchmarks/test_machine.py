"""``bench`` says which machine its figures come from before it prints them."""
from multispin_sim import benchmarks
from multispin_sim.benchmarks import machine
from multispin_sim.outputs.metadata import numpy_simd


def test_cpu_model_reads_the_first_cpu_with_its_family_and_model(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
                    "model name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: Other\n")
    assert machine.cpu_model(info) == "AMD EPYC (family 25, model 17)"
    assert machine.cpu_model(tmp_path / "absent")   # elsewhere: what platform says, never empty


def test_bench_prints_the_machine_first_and_returns_it(monkeypatch, capsys):
    monkeypatch.setattr(benchmarks, "IN_ALL", ())      # no benchmark: only what comes first
    figures = benchmarks.run("all", quick=True)
    said = figures["machine"]
    assert said["numpy_simd"] == numpy_simd() and said["cpus"] >= 1
    assert isinstance(said["compiled_search"], bool) and said["cpu"]
    said_line = capsys.readouterr().out.splitlines()[-1]
    assert said_line == machine.line(said) and said_line.startswith(f"machine: {said['cpu']}, ")
    assert " ".join(said["numpy_simd"] or []) in said_line
