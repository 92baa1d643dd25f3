"""The cycle measurement the lead reports (avta.sim.bench.rtl_cycles): GEMM of N steps within N + 8, ALU
initiation intervals per ACC_READ_PORTS."""

from avta.sim.bench.rtl_cycles import _alu, _gemm, instruction_cycles, main
from avta.isa.config import load_config
from avta.isa.enums import AluOp


def test_gemm_and_alu_cycles():
    cfg = load_config("tiny")
    n = 24
    assert n <= instruction_cycles(cfg, _gemm(n), n) <= n + 8
    assert n <= instruction_cycles(cfg, _alu(n, alu_opcode=AluOp.MAX, use_imm=1), n) <= n + 8
    two = _alu(n, alu_opcode=AluOp.MAX)
    assert 2 * n <= instruction_cycles(cfg, two, n) <= 2 * n + 8
    cfg2 = cfg.replace(acc_read_ports=2)
    assert n <= instruction_cycles(cfg2, two, n) <= n + 8


def test_cli_prints_a_table(capsys):
    assert main(["--config", "tiny", "--steps", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("configuration tiny")
    assert len(lines) == 2 + 1 + 6
