pub fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("gpu-pack lands from the foundation branch")
}
